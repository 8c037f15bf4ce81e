package scanner

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
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

// counterOf is the value of the counter series whose label is value.
func counterOf(t testing.TB, name, label, value string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// TestScannerGaugesHaveNoNamespaceLabel: the per-Scanner gauges label the
// Scanner's namespace scanner_namespace, never namespace, which Prometheus
// would rename to exported_namespace to keep the scrape target's own.
func TestScannerGaugesHaveNoNamespaceLabel(t *testing.T) {
	s := &crowsnestv1alpha1.Scanner{ObjectMeta: metav1.ObjectMeta{Namespace: "gauge-ns", Name: "gauge-s"}}
	s.Status.Images, s.Status.Queued, s.Status.Scanning = 3, 2, 1
	setGauges(s)
	defer deleteGauges(s.Namespace, s.Name)
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"crowsnest_operator_digests_seen": 3, "crowsnest_operator_scans_queued": 2, "crowsnest_operator_scans_active": 1}
	for _, f := range families {
		v, ok := want[f.GetName()]
		if !ok {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if _, bad := labels["namespace"]; bad {
				t.Errorf("%s has a namespace label: %v", f.GetName(), labels)
			}
			if labels["scanner_namespace"] == "gauge-ns" && labels["scanner"] == "gauge-s" {
				if m.GetGauge().GetValue() != v {
					t.Errorf("%s = %v, want %v", f.GetName(), m.GetGauge().GetValue(), v)
				}
				delete(want, f.GetName())
			}
		}
	}
	if len(want) > 0 {
		t.Errorf("no scanner_namespace=gauge-ns series of %v", want)
	}
}
