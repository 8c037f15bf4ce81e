// Package metrics holds the notifier's Prometheus metrics, on a private
// registry, named crowsnest_notifier_*.
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Metrics are the notifier's metrics.
type Metrics struct {
	Registry *prometheus.Registry
	// Events counts consumed events by subject and result (handled,
	// duplicate, invalid, error).
	Events *prometheus.CounterVec
	// Sent counts messages a receiver accepted.
	Sent *prometheus.CounterVec
	// Failed counts failed attempts (each retry counts).
	Failed *prometheus.CounterVec
	// DeadLetter counts messages given up after every attempt, or refused
	// with a 4xx.
	DeadLetter *prometheus.CounterVec
	// Dropped counts items a route did not send: too_old (history read at
	// first start), group_full.
	Dropped *prometheus.CounterVec
	// Suppressed counts findings left out of a route's items because
	// results-api marked them suppressed in the item's namespace (triage
	// exceptions), by route and kind (new, kev).
	Suppressed *prometheus.CounterVec
	// QueueDepth is the items waiting in each route's debounce window.
	QueueDepth *prometheus.GaugeVec
	// ReceiverQueue is the sealed groups waiting for each receiver.
	ReceiverQueue *prometheus.GaugeVec
}

// New registers the metrics on a new registry (with the Go and process
// collectors).
func New() *Metrics {
	r := prometheus.NewRegistry()
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := &Metrics{
		Registry: r,
		Events: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "crowsnest_notifier_events_total",
			Help: "Consumed events by subject and result (handled, duplicate, invalid, error)."}, []string{"subject", "result"}),
		Sent: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "crowsnest_notifier_sent_total",
			Help: "Messages a receiver accepted."}, []string{"receiver", "route"}),
		Failed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "crowsnest_notifier_failed_total",
			Help: "Failed delivery attempts (every retry counts)."}, []string{"receiver", "route"}),
		DeadLetter: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "crowsnest_notifier_dead_letter_total",
			Help: "Messages given up: every attempt failed, or the receiver refused them (4xx)."}, []string{"receiver", "route"}),
		Dropped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "crowsnest_notifier_dropped_total",
			Help: "Items a route did not send, by reason (too_old, group_full)."}, []string{"route", "reason"}),
		Suppressed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "crowsnest_notifier_suppressed_total",
			Help: "Findings left out of a route's items because triage exceptions suppress them in the item's namespace, by kind (new, kev)."},
			[]string{"route", "kind"}),
		QueueDepth: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "crowsnest_notifier_debounce_queue_depth",
			Help: "Items waiting in each route's debounce window."}, []string{"route"}),
		ReceiverQueue: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "crowsnest_notifier_receiver_queue_depth",
			Help: "Sealed messages waiting for each receiver."}, []string{"receiver"}),
	}
	r.MustRegister(m.Events, m.Sent, m.Failed, m.DeadLetter, m.Dropped, m.Suppressed, m.QueueDepth, m.ReceiverQueue)
	registerBuildInfo(r)
	return m
}
