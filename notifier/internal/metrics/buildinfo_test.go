package metrics

import (
	"testing"

	"github.com/crowsnest-dev/crowsnest/test/support/metricsref"
)

// TestBuildInfo: the notifier's registry holds crowsnest_build_info = 1 with the version,
// revision and goversion labels.
func TestBuildInfo(t *testing.T) { metricsref.CheckBuildInfo(t, New().Registry) }
