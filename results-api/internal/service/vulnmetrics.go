package service

import (
	"log/slog"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/events"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/metrics"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/vulnmetrics"
)

// newVulnMetrics registers the vulnerability metrics on m and returns
// their refresher, or nil when o.Interval is 0 (the metrics are off).
func newVulnMetrics(st *store.Store, m *metrics.Metrics, o vulnmetrics.Options, log *slog.Logger) *vulnmetrics.Refresher {
	if o.Interval <= 0 {
		return nil
	}
	col := vulnmetrics.NewCollector()
	rm := m.WatchVulnerabilities(col)
	o.Errors, o.Duration, o.Logger = rm.Errors, rm.Duration, log
	return vulnmetrics.New(st, col, o)
}

// triggering is the event bus as the routes' Notifier that also asks the
// vulnerability metrics for a refresh after each report change this
// replica made (a FindingsChanged always follows a ReportStored).
type triggering struct {
	*events.Bus
	vulns *vulnmetrics.Refresher // nil: metrics off
}

func (t triggering) ReportStored(s report.Summary) {
	t.Bus.ReportStored(s)
	t.vulns.Trigger()
}

func (t triggering) ReportDeleted(s report.Summary) {
	t.Bus.ReportDeleted(s)
	t.vulns.Trigger()
}
