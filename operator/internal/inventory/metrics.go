package inventory

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Metrics, served on the manager's metrics endpoint. No label is named
// namespace: Prometheus' own namespace label of the scrape target would
// clash with it.
var (
	snapshotsPublished = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "crowsnest_operator_inventory_snapshots_published_total",
		Help: "Inventory snapshots acknowledged by JetStream (a republish JetStream deduplicated counts too).",
	})
	snapshotsBuilt = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "crowsnest_operator_inventory_snapshots_built_total",
		Help: "Inventory snapshots built after a change or at start-up, published or not (an unchanged one is not).",
	})
	snapshotsFailed = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "crowsnest_operator_inventory_snapshots_failed_total",
		Help: "Inventory snapshot publishes that failed (retried with the namespace's latest content).",
	})
	snapshotsDropped = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "crowsnest_operator_inventory_snapshots_dropped_total",
		Help: "Changed inventory snapshots JetStream dropped as duplicates: the content went back, within the duplicate window, to an earlier one.",
	})
	workloads = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "crowsnest_operator_inventory_workloads",
		Help: "Workloads in the last published inventory snapshots of every namespace.",
	})
)

func init() {
	metrics.Registry.MustRegister(snapshotsBuilt, snapshotsPublished, snapshotsFailed, snapshotsDropped, workloads)
}
