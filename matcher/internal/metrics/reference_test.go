package metrics

import (
	"testing"

	"github.com/crowsnest-dev/crowsnest/test/support/metricsref"
)

// TestMetricsReference holds docs/metrics/matcher.md to the registry the
// matcher serves (cmd/matcher builds it with New).
func TestMetricsReference(t *testing.T) {
	metricsref.Check(t, "matcher", New(noDB{}, nil).reg)
}
