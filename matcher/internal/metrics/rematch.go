package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/crowsnest-dev/crowsnest/matcher/internal/rematch"
)

// rematchMetrics are the re-match pass's and the event publisher's series.
type rematchMetrics struct {
	reports    *prometheus.CounterVec
	skipped    prometheus.Counter
	mismatches prometheus.Counter
	passTime   prometheus.Histogram
	inProgress prometheus.Gauge
	lastPass   prometheus.Gauge
	pubFails   *prometheus.CounterVec
	pending    prometheus.Gauge
	dropped    prometheus.Counter
}

func newRematchMetrics(reg *prometheus.Registry) rematchMetrics {
	r := rematchMetrics{
		reports: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "crowsnest_rematch_reports_total",
			Help: "Reports handled by re-match passes, by result: changed, unchanged or failed.",
		}, []string{"result"}),
		skipped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "crowsnest_rematch_skipped_reports_total",
			Help: "Reports recorded unchanged without a match because the DB update cannot change them (their lookups meet no changed row); also counted as unchanged.",
		}),
		mismatches: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "crowsnest_rematch_skip_mismatch_total",
			Help: "Reports the DB diff would have skipped whose full re-match (the pass's random check sample) found other findings; they were uploaded. Anything above 0 is a bug in skipping.",
		}),
		passTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "crowsnest_rematch_pass_seconds",
			Help: "Duration of finished re-match passes, from their start (before any resume) to their end.",
			// From a handful of reports to a large fleet on a slow DB.
			Buckets: prometheus.ExponentialBuckets(1, 4, 9), // 1s … ~18h
		}),
		inProgress: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "crowsnest_rematch_in_progress",
			Help: "1 while a re-match pass is under way (including a pass waiting to resume after an error), else 0.",
		}),
		lastPass: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "crowsnest_rematch_last_pass_timestamp_seconds",
			Help: "When the last re-match pass finished, Unix seconds; 0 before the first one.",
		}),
		pubFails: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "crowsnest_events_publish_failures_total",
			Help: "Failed attempts to publish an event to NATS JetStream, by subject; the event stays pending and is retried.",
		}, []string{"subject"}),
		pending: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "crowsnest_events_pending",
			Help: "Events recorded in the pending file and not yet acknowledged by JetStream.",
		}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "crowsnest_events_dropped_total",
			Help: "Pending events dropped, oldest first, because the pending file was full.",
		}),
	}
	for _, o := range []rematch.Outcome{rematch.OutcomeChanged, rematch.OutcomeUnchanged, rematch.OutcomeFailed} {
		r.reports.WithLabelValues(string(o))
	}
	reg.MustRegister(r.reports, r.skipped, r.mismatches, r.passTime, r.inProgress, r.lastPass, r.pubFails, r.pending, r.dropped)
	return r
}

var _ rematch.Metrics = (*Metrics)(nil)

// Report implements rematch.Metrics: one report handled.
func (m *Metrics) Report(o rematch.Outcome, _ time.Duration) {
	m.rematch.reports.WithLabelValues(string(o)).Inc()
}

// Skipped implements rematch.Metrics: one report skipped by the DB diff.
func (m *Metrics) Skipped() { m.rematch.skipped.Inc() }

// SkipMismatch implements rematch.Metrics: a checked skip was wrong.
func (m *Metrics) SkipMismatch() { m.rematch.mismatches.Inc() }

// PassDone implements rematch.Metrics: a pass handled every report.
func (m *Metrics) PassDone(r rematch.Result) {
	m.rematch.passTime.Observe(r.Duration.Seconds())
	m.rematch.lastPass.Set(float64(r.FinishedAt.Unix()))
	m.rematch.inProgress.Set(0)
}

// RematchStarted records that a pass began working (or resumed).
func (m *Metrics) RematchStarted() { m.rematch.inProgress.Set(1) }

// PublishFailed counts one failed publish attempt on subject.
func (m *Metrics) PublishFailed(subject string) { m.rematch.pubFails.WithLabelValues(subject).Inc() }

// Pending sets the number of events waiting to be published.
func (m *Metrics) Pending(n int) { m.rematch.pending.Set(float64(n)) }

// Dropped counts pending events dropped because the pending file was full.
func (m *Metrics) Dropped(n int) { m.rematch.dropped.Add(float64(n)) }
