package discovery

import (
	"maps"
	"runtime"
	"slices"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func fullPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web-1-x", Namespace: "shop", ResourceVersion: "42", Labels: map[string]string{"app": "web", "tier": "front"},
			OwnerReferences: []metav1.OwnerReference{
				{Kind: "ConfigMap", Name: "not-a-controller"},
				{Kind: "ReplicaSet", Name: "web-1", Controller: ptr.To(true)},
			},
		},
		Spec: corev1.PodSpec{
			NodeName:            "node-a",
			ImagePullSecrets:    []corev1.LocalObjectReference{{Name: "regcred"}, {Name: ""}, {Name: "mirror"}},
			InitContainers:      []corev1.Container{{Name: "migrate", Image: "db:2"}},
			Containers:          []corev1.Container{{Name: "web", Image: "nginx:1.27"}, {Name: "late", Image: "late:1"}},
			EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox"}}},
		},
		Status: corev1.PodStatus{
			Phase:                      corev1.PodRunning,
			InitContainerStatuses:      []corev1.ContainerStatus{{Name: "migrate", Image: "docker.io/library/db:2", ImageID: "db@sha256:1"}},
			ContainerStatuses:          []corev1.ContainerStatus{{Name: "web", Image: "docker.io/library/nginx:1.27", ImageID: "nginx@sha256:2"}, {Name: "late", Image: "late:1"}},
			EphemeralContainerStatuses: []corev1.ContainerStatus{{Name: "debug", Image: "docker.io/library/busybox:latest", ImageID: "busybox@sha256:3"}},
		},
	}
}

// TestCompactKeepsWhatIsRead: every accessor returns what the Pod from the
// API server said; containers that have not started are left out and the
// image is the one written in the spec.
func TestCompactKeepsWhatIsRead(t *testing.T) {
	p := Compact(fullPod())
	if p.Name != "web-1-x" || p.Namespace() != "shop" || p.ResourceVersion != "42" || p.NodeName() != "node-a" || p.Phase() != corev1.PodRunning || p.Deleting() || p.Finished() {
		t.Errorf("identity/state = %s/%s rv=%s node=%s phase=%s deleting=%v", p.Namespace(), p.Name, p.ResourceVersion, p.NodeName(), p.Phase(), p.Deleting())
	}
	if got := p.Owner(); got != (Owner{Kind: "ReplicaSet", Name: "web-1"}) {
		t.Errorf("owner = %+v", got)
	}
	if v, ok := p.Label("tier"); !ok || v != "front" {
		t.Errorf("label tier = %q, %v", v, ok)
	}
	if _, ok := p.Label("missing"); ok {
		t.Error("label missing found")
	}
	if got := slices.Collect(p.PullSecrets()); !slices.Equal(got, []string{"regcred", "mirror"}) {
		t.Errorf("pull secrets = %q", got)
	}
	want := []Container{
		{Name: "migrate", Image: "db:2", ImageID: "db@sha256:1", Init: true},
		{Name: "web", Image: "nginx:1.27", ImageID: "nginx@sha256:2"},
		{Name: "debug", Image: "busybox", ImageID: "busybox@sha256:3"},
	}
	if got := slices.Collect(p.Containers()); !slices.Equal(got, want) || p.NumContainers() != len(want) {
		t.Errorf("containers = %+v (%d), want %+v", got, p.NumContainers(), want)
	}
	m := p.GetObjectMeta()
	if m.GetNamespace() != "shop" || m.GetName() != "web-1-x" || m.GetResourceVersion() != "42" {
		t.Errorf("object meta = %s/%s rv=%s", m.GetNamespace(), m.GetName(), m.GetResourceVersion())
	}

	gone := fullPod()
	gone.DeletionTimestamp = ptr.To(metav1.Now())
	if p := Compact(gone); !p.Deleting() || !p.Finished() {
		t.Error("a Pod with a deletion timestamp is not deleting/finished")
	}
	done := fullPod()
	done.Status.Phase = corev1.PodSucceeded
	if p := Compact(done); !p.Finished() {
		t.Error("a succeeded Pod is not finished")
	}
}

// TestPodSize: the Pod cache's memory at 100,000 Pods is budgeted on a
// 64-byte Pod (docs/benchmarks.md); a new field goes into podMeta, which
// replicas share, unless every Pod really differs in it.
func TestPodSize(t *testing.T) {
	if s := unsafe.Sizeof(Pod{}); s != 64 {
		t.Errorf("a Pod is %d bytes, want 64", s)
	}
}

// TestCompactSharesAcrossCollections: replicas compacted with garbage
// collections in between still share one copy of what they have in common.
// Interning through unique.Make(s).Value() alone does not: the string does
// not keep the canonical entry alive, so after a collection every Pod gets
// its own copy again, which is what the operator's earlier intern did.
func TestCompactSharesAcrossCollections(t *testing.T) {
	first := Compact(fullPod())
	for i := range 3 {
		runtime.GC()
		in := fullPod()
		in.Name = "web-1-" + string(rune('a'+i))
		in.ResourceVersion = "43"
		// Fresh strings, as a watch event decodes them.
		in.Namespace = string([]byte("shop"))
		in.Status.ContainerStatuses[0].ImageID = string([]byte("nginx@sha256:2"))
		in.Labels = maps.Clone(in.Labels)
		next := Compact(in)
		if next.meta != first.meta {
			t.Fatalf("replica %d: its own meta", i)
		}
		a, b := slices.Collect(first.Containers()), slices.Collect(next.Containers())
		if unsafe.StringData(a[1].ImageID) != unsafe.StringData(b[1].ImageID) || unsafe.StringData(first.Namespace()) != unsafe.StringData(next.Namespace()) {
			t.Fatalf("replica %d: its own copy of the imageID or namespace", i)
		}
		if Relevant(first, next) {
			t.Errorf("replica %d: a new name and resourceVersion count as relevant", i)
		}
	}
	runtime.KeepAlive(first)
}

// TestRelevant: a change the reconciler or the inventory reads is relevant.
func TestRelevant(t *testing.T) {
	base := Compact(fullPod())
	for name, change := range map[string]func(*corev1.Pod){
		"label":      func(p *corev1.Pod) { p.Labels["tier"] = "back" },
		"phase":      func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed },
		"deleting":   func(p *corev1.Pod) { p.DeletionTimestamp = ptr.To(metav1.Now()) },
		"node":       func(p *corev1.Pod) { p.Spec.NodeName = "node-b" },
		"owner":      func(p *corev1.Pod) { p.OwnerReferences[1].Name = "web-2" },
		"started":    func(p *corev1.Pod) { p.Status.ContainerStatuses[1].ImageID = "late@sha256:4" },
		"new digest": func(p *corev1.Pod) { p.Status.ContainerStatuses[0].ImageID = "nginx@sha256:5" },
	} {
		in := fullPod()
		change(in)
		if !Relevant(base, Compact(in)) {
			t.Errorf("%s: not relevant", name)
		}
	}
}
