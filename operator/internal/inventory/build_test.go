package inventory

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	"github.com/crowsnest-dev/crowsnest/operator/internal/discovery"
)

func digest(i int) string { return fmt.Sprintf("sha256:%064x", i) }

// pod builds a compact Pod as the pod cache holds it; each container is
// "name=image@imageID" and runs.
type podOpt func(*corev1.Pod)

func pod(name string, opts ...podOpt) *discovery.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	for _, o := range opts {
		o(p)
	}
	return discovery.Compact(p)
}

func ownedBy(kind, name string) podOpt {
	return func(p *corev1.Pod) {
		p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{Kind: kind, Name: name, Controller: ptr.To(true)})
	}
}

func container(name, image, imageID string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: name, Image: image})
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses,
			corev1.ContainerStatus{Name: name, Image: "docker.io/library/" + image, ImageID: imageID})
	}
}

func initContainer(name, image, imageID string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: name, Image: image})
		p.Status.InitContainerStatuses = append(p.Status.InitContainerStatuses, corev1.ContainerStatus{Name: name, ImageID: imageID})
	}
}

func phase(ph corev1.PodPhase) podOpt { return func(p *corev1.Pod) { p.Status.Phase = ph } }

// resolveAs resolves ReplicaSet rs-* to Deployment web and keeps every other
// owner, as Owners does with a cached ReplicaSet.
func resolveAs(_, pod string, o discovery.Owner) (string, string) {
	switch {
	case o.Kind == "":
		return eventsv1.KindPod, pod
	case o.Kind == eventsv1.KindReplicaSet && o.Name == "web-1":
		return eventsv1.KindDeployment, "web"
	}
	return o.Kind, o.Name
}

// TestBuildCountsRunningContainersPerWorkload: Pods of one workload are
// counted per (container, image as written in the spec, digest); finished,
// deleting and not yet started Pods and unparsable imageIDs are left out;
// init containers are flagged; everything comes out sorted.
func TestBuildCountsRunningContainersPerWorkload(t *testing.T) {
	a, b, c := digest(1), digest(2), digest(3)
	pods := []*discovery.Pod{
		pod("web-1-x", ownedBy("ReplicaSet", "web-1"), container("nginx", "nginx:1.27", "docker-pullable://nginx@"+a), container("envoy", "envoy:1", "envoy@"+b)),
		pod("web-1-y", ownedBy("ReplicaSet", "web-1"), container("nginx", "nginx:1.27", "nginx@"+a), container("envoy", "envoy:1", "envoy@"+b)),
		pod("db-0", ownedBy("StatefulSet", "db"), initContainer("migrate", "db:2", "db@"+c), container("db", "db:2", "db@"+c)),
		pod("debug", container("sh", "busybox", c)), // a bare digest (kind load) still names what runs
		pod("done", ownedBy("Job", "once"), container("x", "x", "x@"+a), phase(corev1.PodSucceeded)),
		pod("failed", container("x", "x", "x@"+a), phase(corev1.PodFailed)),
		pod("pending", container("x", "x", "")),
		pod("garbage", container("x", "x", "not an image id")),
		pod("gone", container("x", "x", "x@"+a), func(p *corev1.Pod) { p.DeletionTimestamp = ptr.To(metav1.Now()) }),
	}
	got := Build("ns", map[string]string{"team": "a"}, pods, resolveAs)
	want := eventsv1.InventorySnapshot{Namespace: "ns", Labels: map[string]string{"team": "a"}, Workloads: []eventsv1.InventoryWorkload{
		{Kind: "Deployment", Name: "web", Containers: []eventsv1.InventoryContainer{
			{Name: "envoy", Image: "envoy:1", Digest: b, Pods: 2},
			{Name: "nginx", Image: "nginx:1.27", Digest: a, Pods: 2},
		}},
		{Kind: "Pod", Name: "debug", Containers: []eventsv1.InventoryContainer{{Name: "sh", Image: "busybox", Digest: c, Pods: 1}}},
		{Kind: "StatefulSet", Name: "db", Containers: []eventsv1.InventoryContainer{
			{Name: "db", Image: "db:2", Digest: c, Pods: 1},
			{Name: "migrate", Image: "db:2", Digest: c, Init: true, Pods: 1},
		}},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Build =\n%+v\nwant\n%+v", got, want)
	}
	// The same Pods in another order are the same snapshot, the same id.
	reversed := make([]*discovery.Pod, len(pods))
	for i, p := range pods {
		reversed[len(pods)-1-i] = p
	}
	if again := Build("ns", map[string]string{"team": "a"}, reversed, resolveAs); eventsv1.InventoryID(again) != eventsv1.InventoryID(got) {
		t.Error("the id depends on the order of the Pods")
	}
	if empty := Build("ns", nil, nil, resolveAs); empty.Workloads == nil || len(empty.Workloads) != 0 {
		t.Errorf("no Pods: workloads %#v, want an empty list (JSON [] says nothing runs)", empty.Workloads)
	}
}

// TestBuildBoundsEntriesAndLabels: past MaxInventoryEntries containers the
// snapshot is cut in sort order and marked Truncated; past
// MaxInventoryLabels labels the first keys in order are kept. The result
// passes the contract's validation.
func TestBuildBoundsEntriesAndLabels(t *testing.T) {
	var pods []*discovery.Pod
	for i := range eventsv1.MaxInventoryEntries + 10 {
		pods = append(pods, pod(fmt.Sprintf("p-%05d", i), container("c", "img", "img@"+digest(i))))
	}
	labels := map[string]string{}
	for i := range eventsv1.MaxInventoryLabels + 5 {
		labels[fmt.Sprintf("k%03d", i)] = "v"
	}
	got := Build("ns", labels, pods, resolveAs)
	entries := 0
	for _, w := range got.Workloads {
		entries += len(w.Containers)
	}
	if !got.Truncated || entries != eventsv1.MaxInventoryEntries {
		t.Errorf("truncated %v with %d entries, want true with %d", got.Truncated, entries, eventsv1.MaxInventoryEntries)
	}
	if last := got.Workloads[len(got.Workloads)-1].Name; last != fmt.Sprintf("p-%05d", eventsv1.MaxInventoryEntries-1) {
		t.Errorf("last workload kept %s: not the first ones in sort order", last)
	}
	if len(got.Labels) != eventsv1.MaxInventoryLabels || got.Labels["k000"] != "v" || got.Labels[fmt.Sprintf("k%03d", eventsv1.MaxInventoryLabels)] != "" {
		t.Errorf("%d labels kept, want the first %d keys", len(got.Labels), eventsv1.MaxInventoryLabels)
	}
	ev, err := eventsv1.New(eventsv1.SourceOperator, eventsv1.TypeInventorySnapshot, eventsv1.InventoryID(got), "ns", t0(), got)
	if err != nil {
		t.Fatal(err)
	}
	if err := eventsv1.Validate(eventsv1.SubjectInventorySnapshot, ev, t0(), 0); err != nil {
		t.Errorf("a bounded snapshot fails validation: %v", err)
	}
}

func t0() time.Time { return time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC) }
