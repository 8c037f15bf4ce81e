package metrics

import (
	"testing"

	"github.com/crowsnest-dev/crowsnest/test/support/metricsref"
)

// TestMetricsReference holds docs/metrics/notifier.md to the registry the
// notifier serves (cmd/notifier builds it with New).
func TestMetricsReference(t *testing.T) {
	metricsref.Check(t, "notifier", New().Registry)
}
