// Package metrics defines the results API's Prometheus metrics on a private
// registry, named crowsnest_results_api_* except crowsnest_events_invalid_total,
// which the operator exports under the same name, and the fleet's
// vulnerability metrics (WatchVulnerabilities), which describe the cluster
// rather than the service.
package metrics

import (
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

const ns, sub = "crowsnest", "results_api"

// Metrics holds every collector. Labels are low-cardinality: route patterns,
// status codes, subjects and operation names.
type Metrics struct {
	Registry         *prometheus.Registry
	HTTPDuration     *prometheus.HistogramVec // route, method, code
	ReportsIngested  *prometheus.CounterVec   // result: created|replaced|unchanged|rejected
	IngestBytes      prometheus.Counter
	FindingsStored   prometheus.Counter
	WebSocketClients prometheus.Gauge
	WebSocketDropped prometheus.Counter
	EventsPublished  *prometheus.CounterVec // subject
	EventsConsumed   *prometheus.CounterVec // subject
	EventsFailed     *prometheus.CounterVec // subject, stage: publish|consume
	EventsInvalid    *prometheus.CounterVec // subject, reason: events/v1 Reason
	DBErrors         *prometheus.CounterVec // op
	// Exceptions counts the triage exceptions by audit state (set every
	// five minutes with --exceptions).
	Exceptions *prometheus.GaugeVec // state: expired|invalid_expiry|lapsed_on_fix|stale|expiring|active

	// Resource limits (httpapi.Limits, the hub's client caps).
	LimitRefusals     *prometheus.CounterVec // limit: ingest_memory|read_memory|findings|websocket_per_address|websocket_total
	MemoryBudgetInUse *prometheus.GaugeVec   // budget: ingest|read

	// The transactional outbox (set by the relay; SetOutbox).
	OutboxDepth           prometheus.Gauge
	OutboxPublishFailures *prometheus.CounterVec // subject
	outbox                outboxAge
}

// outboxAge is the age of the oldest outbox event as last measured, and
// when: it keeps growing between measurements, so a relay that stopped
// measuring (stuck, or its database gone) does not freeze it.
type outboxAge struct {
	mu       sync.Mutex
	age      time.Duration
	measured time.Time // zero: empty outbox
}

// New registers every metric on a fresh private registry.
func New() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		HTTPDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub,
			Name: "http_request_duration_seconds", Help: "HTTP request duration by route pattern, method and status code.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}},
			[]string{"route", "method", "code"}),
		ReportsIngested: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "reports_ingested_total", Help: "Report uploads by result."}, []string{"result"}),
		IngestBytes: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "ingest_bytes_total", Help: "Decompressed BOM bytes accepted."}),
		FindingsStored: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "findings_stored_total", Help: "Findings written to the store."}),
		WebSocketClients: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub,
			Name: "websocket_clients", Help: "Connected WebSocket clients."}),
		WebSocketDropped: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "websocket_slow_clients_dropped_total", Help: "WebSocket clients closed because their queue was full."}),
		EventsPublished: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "events_published_total", Help: "Events published to JetStream."}, []string{"subject"}),
		EventsConsumed: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "events_consumed_total", Help: "Events consumed from JetStream."}, []string{"subject"}),
		EventsFailed: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "events_failed_total", Help: "Events that failed to publish or consume."}, []string{"subject", "stage"}),
		EventsInvalid: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: "events",
			Name: "invalid_total", Help: "Received events that failed validation and were dropped, by subject and broken rule."},
			[]string{"subject", "reason"}),
		DBErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "db_errors_total", Help: "Failed database operations."}, []string{"op"}),
		Exceptions: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub,
			Name: "exceptions", Help: "Triage exceptions (VulnerabilityException, ClusterVulnerabilityException) by audit state: expired, invalid_expiry, lapsed_on_fix, stale, expiring (within 7 days), active."},
			[]string{"state"}),
	}
	m.Registry.MustRegister(m.HTTPDuration, m.ReportsIngested, m.IngestBytes, m.FindingsStored,
		m.WebSocketClients, m.WebSocketDropped, m.EventsPublished, m.EventsConsumed, m.EventsFailed, m.EventsInvalid, m.DBErrors, m.Exceptions,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.registerLimits()
	m.registerOutbox()
	m.registerBuildInfo()
	return m
}

func (m *Metrics) registerOutbox() {
	m.OutboxDepth = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub,
		Name: "outbox_depth", Help: "Events waiting in the transactional outbox to be published to JetStream."})
	m.OutboxPublishFailures = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
		Name: "outbox_publish_failures_total", Help: "Failed publishes of outbox events, by subject; each event is retried with backoff until published."},
		[]string{"subject"})
	oldest := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub,
		Name: "outbox_oldest_age_seconds", Help: "Age of the oldest event waiting in the transactional outbox (0 when empty)."},
		m.outboxOldestAge)
	m.Registry.MustRegister(m.OutboxDepth, m.OutboxPublishFailures, oldest)
}

// SetOutbox records a measurement of the outbox: how many events wait and
// how long the oldest has waited.
func (m *Metrics) SetOutbox(depth int64, oldestAge time.Duration) {
	m.OutboxDepth.Set(float64(depth))
	m.outbox.mu.Lock()
	defer m.outbox.mu.Unlock()
	m.outbox.age, m.outbox.measured = oldestAge, time.Time{}
	if depth > 0 {
		m.outbox.measured = time.Now()
	}
}

func (m *Metrics) outboxOldestAge() float64 {
	m.outbox.mu.Lock()
	defer m.outbox.mu.Unlock()
	if m.outbox.measured.IsZero() {
		return 0
	}
	return (m.outbox.age + time.Since(m.outbox.measured)).Seconds()
}

// WatchNATS exports crowsnest_results_api_nats_connected, 1 while
// connected() and 0 otherwise. The bus calls it once, when NATS is
// configured; without NATS the metric is absent.
func (m *Metrics) WatchNATS(connected func() bool) {
	m.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub,
		Name: "nats_connected", Help: "1 while the NATS connection is up, 0 while it is down (reconnecting)."},
		func() float64 {
			if connected() {
				return 1
			}
			return 0
		}))
}

// VulnRefresh measures the refreshes of the vulnerability metrics.
type VulnRefresh struct {
	Errors   prometheus.Counter   // failed refreshes
	Duration prometheus.Histogram // seconds per refresh, failed ones included
}

// WatchVulnerabilities registers the vulnerability metrics' collector
// (vulnmetrics.Collector: crowsnest_vulnerabilities and its kin) and the
// metrics of their refreshes, which it returns for the refresher. Called
// once, when the vulnerability metrics are on; otherwise all are absent.
func (m *Metrics) WatchVulnerabilities(values prometheus.Collector) VulnRefresh {
	r := VulnRefresh{
		Errors: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: "vulnerability_metrics",
			Name: "refresh_errors_total", Help: "Failed refreshes of the vulnerability metrics from the store; the previous values stay exported."}),
		Duration: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Subsystem: "vulnerability_metrics",
			Name: "refresh_duration_seconds", Help: "Duration of the refreshes of the vulnerability metrics from the store, failed ones included.",
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}}),
	}
	m.Registry.MustRegister(values, r.Errors, r.Duration)
	return r
}

func (m *Metrics) registerLimits() {
	m.LimitRefusals = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
		Name: "limit_refusals_total", Help: "Requests refused by a resource limit, by limit."}, []string{"limit"})
	m.MemoryBudgetInUse = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub,
		Name: "memory_budget_in_use_bytes", Help: "Bytes of a memory budget (ingest, read) held by requests in flight."}, []string{"budget"})
	m.Registry.MustRegister(m.LimitRefusals, m.MemoryBudgetInUse)
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry})
}
