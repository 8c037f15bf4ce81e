package controller

import (
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// counterSum adds up every series of a counter in controller-runtime's registry.
func counterSum(t testing.TB, name string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, f := range families {
		if f.GetName() == name {
			for _, m := range f.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}
