package discovery

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// BenchmarkCollect10kPods is the pure part of a reconcile at 10,000 Pods
// with 2 containers each and 500 distinct digests.
func BenchmarkCollect10kPods(b *testing.B) {
	pods := make([]corev1.Pod, 10000)
	for i := range pods {
		pods[i] = pod(fmt.Sprintf("app-%05d", i),
			withImageID("a", fmt.Sprintf("ghcr.io/bench/a@sha256:%064x", i%250)),
			withImageID("b", fmt.Sprintf("ghcr.io/bench/b@sha256:%064x", 250+i%250)))
	}
	b.ReportAllocs()
	for b.Loop() {
		if inv := Collect(pods, DefaultIgnoreLabelForTest); len(inv.Targets) != 500 {
			b.Fatalf("%d targets", len(inv.Targets))
		}
	}
}
