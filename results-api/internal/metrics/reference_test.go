package metrics_test

import (
	"testing"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/metrics"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/vulnmetrics"
	"github.com/crowsnest-dev/crowsnest/test/support/metricsref"
)

// TestMetricsReference holds docs/metrics/results-api.md to the registry
// results-api serves as the chart runs it: New, the NATS gauge the bus adds
// when NATS is configured, and the vulnerability metrics (on by default).
func TestMetricsReference(t *testing.T) {
	m := metrics.New()
	m.WatchNATS(func() bool { return true })
	m.WatchVulnerabilities(vulnmetrics.NewCollector())
	metricsref.Check(t, "results-api", m.Registry)
}
