package discovery

import (
	"fmt"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// BenchmarkCollect10kPods is the pure part of a reconcile at 10,000 Pods
// with 2 containers each and 500 distinct digests (200 Pods and 100 digests
// when CROWSNEST_BENCH_SMOKE is set).
func BenchmarkCollect10kPods(b *testing.B) {
	n, digests := 10000, 500
	if os.Getenv("CROWSNEST_BENCH_SMOKE") != "" {
		n, digests = 200, 100
	}
	half := digests / 2
	pods := make([]corev1.Pod, n)
	for i := range pods {
		pods[i] = pod(fmt.Sprintf("app-%05d", i),
			withImageID("a", fmt.Sprintf("ghcr.io/bench/a@sha256:%064x", i%half)),
			withImageID("b", fmt.Sprintf("ghcr.io/bench/b@sha256:%064x", half+i%half)))
	}
	compact := compactAll(pods)
	b.ReportAllocs()
	for b.Loop() {
		if inv := Collect(compact, DefaultIgnoreLabelForTest); len(inv.Targets) != digests {
			b.Fatalf("%d targets, want %d", len(inv.Targets), digests)
		}
	}
}
