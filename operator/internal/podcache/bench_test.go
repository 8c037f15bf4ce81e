package podcache

import (
	"fmt"
	"os"
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/crowsnest-dev/crowsnest/operator/internal/discovery"
)

// BenchmarkStore100kPods measures what the cache's store keeps for the
// 100,000-Pod scenario of bench-operator-rss (2 containers per Pod, 2,000
// namespaces, 5,000 digests): the live heap of the compact Pods, the
// store and its namespace and digest indexes after a collection, per Pod.
// Every Pod is decoded fresh, as from a watch, and collections run while
// the store fills, as they do in the operator. "replicas" are the
// benchmark's Pods (one label set, no owner, no node); in "distinct" every
// Pod has its own owner, node and a label of its own (a StatefulSet's
// pod-name), so no two share their metadata. CROWSNEST_BENCH_SMOKE shrinks
// it to 2,000 Pods.
func BenchmarkStore100kPods(b *testing.B) {
	for _, distinct := range []bool{false, true} {
		b.Run(map[bool]string{false: "replicas", true: "distinct"}[distinct], func(b *testing.B) { benchStore(b, distinct) })
	}
}

func benchStore(b *testing.B, distinct bool) {
	pods, namespaces, digests := 100000, 2000, 5000
	if os.Getenv("CROWSNEST_BENCH_SMOKE") != "" {
		pods, namespaces, digests = 2000, 40, 100
	}
	half := digests / 2
	var heap uint64
	for b.Loop() {
		store := toolscache.NewIndexer(toolscache.DeletionHandlingMetaNamespaceKeyFunc, indexers())
		before := liveHeap()
		for i := range pods {
			p := benchPod(i, pods, namespaces, i%half, half+i%half)
			if distinct {
				p.Labels["statefulset.kubernetes.io/pod-name"] = p.Name
				p.Spec.NodeName = fmt.Sprintf("node-%06d", i)
				p.OwnerReferences = []metav1.OwnerReference{{Kind: "StatefulSet", Name: fmt.Sprintf("set-%06d", i), Controller: ptr.To(true)}}
			}
			if err := store.Add(discovery.Compact(p)); err != nil {
				b.Fatal(err)
			}
		}
		heap = liveHeap() - before
		if got := len(store.ListIndexFuncValues(DigestIndex)); got != digests {
			b.Fatalf("%d digests indexed, want %d", got, digests)
		}
		runtime.KeepAlive(store)
	}
	b.ReportMetric(float64(heap)/float64(pods), "heap-B/Pod")
	b.ReportMetric(float64(heap)/(1<<20), "heap-MiB")
}

func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// benchPod is Pod i of the scenario, running digests x and y, with a
// uid and resourceVersion of realistic length.
func benchPod(i, pods, namespaces, x, y int) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: fmt.Sprintf("app-%06d", i), Namespace: fmt.Sprintf("bench-%04d", i*namespaces/pods),
		UID: types.UID(fmt.Sprintf("%08x-0000-4000-8000-000000000000", i)), ResourceVersion: fmt.Sprint(100000000 + i),
		Labels: map[string]string{"app": "bench"},
	}}
	p.Status.Phase = corev1.PodRunning
	for c, d := range []int{x, y} {
		name, image := fmt.Sprintf("c%d", c), fmt.Sprintf("ghcr.io/bench/app-%d:1", c)
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: name, Image: image})
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: name, Image: image, ImageID: fmt.Sprintf("ghcr.io/bench/app-%d@sha256:%064x", c, 0xbe0000+d),
		})
	}
	return p
}
