package rematch

import (
	"os"
	"testing"

	"github.com/crowsnest-dev/crowsnest/test/support/pgtest"
)

// The pass tests run against a real results-api (resultsapitest: its binary
// on a throwaway Postgres).
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
