package main

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/crowsnest-dev/crowsnest/test/support/metricsref"
)

// TestMetricsReference holds docs/metrics/operator.md to the registry the
// manager serves: controller-runtime's metrics.Registry, with everything
// this binary's imports register in init (the controller, inventory and bus
// packages, and controller-runtime's own controller, workqueue and client
// metrics).
func TestMetricsReference(t *testing.T) {
	reg, ok := metrics.Registry.(prometheus.Collector)
	if !ok {
		t.Fatalf("controller-runtime's metrics.Registry is a %T, not a prometheus.Collector", metrics.Registry)
	}
	metricsref.Check(t, "operator", reg)
}
