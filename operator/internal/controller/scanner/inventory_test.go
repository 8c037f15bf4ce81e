package scanner

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	"github.com/crowsnest-dev/crowsnest/operator/internal/inventory"
	"github.com/crowsnest-dev/crowsnest/test/support/natstest"
	"github.com/crowsnest-dev/crowsnest/test/support/resultsapitest"
)

// TestInventoryPublishesWorkloadsPerNamespace runs the operator with the
// inventory on against envtest and an embedded JetStream. envtest has no
// controllers, so the test creates the workload objects and their Pods
// with owner references itself and plays the kubelet (imageIDs in the Pod
// status). It counts the stream's messages exactly: one snapshot per
// namespace at start-up, none for a change that leaves the content as it
// was, one per real change (a scale to zero, the Deployment back, the last
// Pod gone), and one per namespace after a restart. The Deployment coming
// back restores the first snapshot's content: its id differs all the same
// (it names its predecessor, Previous), so JetStream does not drop it as a
// duplicate of the first.
func TestInventoryPublishesWorkloadsPerNamespace(t *testing.T) {
	ctx := context.Background()
	_, natsURL := natstest.StartT(t)
	ns, other, own := labelledNamespace(t, map[string]string{"team": "payments"}), newNamespace(t), newNamespace(t)

	d := []string{testDigest(101), testDigest(102), testDigest(103), testDigest(104), testDigest(105), testDigest(106)}
	labels := map[string]string{"app": "web"}
	web := create(t, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template(labels)}})
	rs := create(t, &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-7d9f", Namespace: ns, OwnerReferences: controlledBy(t, web)},
		Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template(labels)}})
	db := create(t, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns},
		Spec: appsv1.StatefulSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, Template: template(map[string]string{"app": "db"})}})
	agent := create(t, &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: ns},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}}, Template: template(map[string]string{"app": "agent"})}})
	nightly := create(t, &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: ns},
		Spec: batchv1.CronJobSpec{Schedule: "0 3 * * *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: jobTemplate()}}}})
	nightlyRun := create(t, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "nightly-29400180", Namespace: ns, OwnerReferences: controlledBy(t, nightly)},
		Spec: batchv1.JobSpec{Template: jobTemplate()}})
	migrate := create(t, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "migrate", Namespace: ns}, Spec: batchv1.JobSpec{Template: jobTemplate()}})

	startWorkloadPod(t, ns, "web-7d9f-a", labels, rs, "nginx:1.27", "nginx@"+d[0])
	startWorkloadPod(t, ns, "web-7d9f-b", labels, rs, "nginx:1.27", "docker.io/library/nginx@"+d[0])
	startWorkloadPod(t, ns, "db-0", nil, db, "postgres:17", "postgres@"+d[1])
	startWorkloadPod(t, ns, "agent-x1", nil, agent, "ghcr.io/org/agent:3", "ghcr.io/org/agent@"+d[2])
	startWorkloadPod(t, ns, "nightly-29400180-q", nil, nightlyRun, "ghcr.io/org/report:1", "ghcr.io/org/report@"+d[3])
	startWorkloadPod(t, ns, "migrate-z", nil, migrate, "ghcr.io/org/migrate:1", "ghcr.io/org/migrate@"+d[4])
	startWorkloadPod(t, ns, "debug", nil, nil, "busybox:1.37", "busybox@"+d[5], "setup=alpine:3@"+"alpine@"+d[5])
	startWorkloadPod(t, other, "solo", nil, nil, "busybox:1.37", "busybox@"+d[5])
	startWorkloadPod(t, own, "operator-0", nil, nil, "ghcr.io/crowsnest-dev/operator:1", "ghcr.io/crowsnest-dev/operator@"+d[0])

	opts := testOptions()
	opts.WatchNamespaces = []string{ns, other, own}
	opts.Inventory = inventory.Options{Enabled: true, Debounce: time.Second, NamespaceLabels: true, Exclude: []string{own}}
	op := startOperator(t, ns, "http://127.0.0.1:1", natsURL, opts)

	want := eventsv1.InventorySnapshot{Namespace: ns, Labels: map[string]string{"team": "payments", corev1.LabelMetadataName: ns}, Workloads: []eventsv1.InventoryWorkload{
		{Kind: "CronJob", Name: "nightly", Containers: one("main", "ghcr.io/org/report:1", d[3], 1)},
		{Kind: "DaemonSet", Name: "agent", Containers: one("main", "ghcr.io/org/agent:3", d[2], 1)},
		{Kind: "Deployment", Name: "web", Containers: one("main", "nginx:1.27", d[0], 2)},
		{Kind: "Job", Name: "migrate", Containers: one("main", "ghcr.io/org/migrate:1", d[4], 1)},
		{Kind: "Pod", Name: "debug", Containers: []eventsv1.InventoryContainer{
			{Name: "main", Image: "busybox:1.37", Digest: d[5], Pods: 1},
			{Name: "setup", Image: "alpine:3", Digest: d[5], Init: true, Pods: 1},
		}},
		{Kind: "StatefulSet", Name: "db", Containers: one("main", "postgres:17", d[1], 1)},
	}}
	eventually(t, 30*time.Second, "a snapshot of each namespace", snapshotsOf(t, natsURL, map[string]int{ns: 1, other: 1}))
	snaps := inventorySnapshots(t, natsURL)
	got := snaps[ns][0]
	if !strings.HasPrefix(got.Previous, "start:") {
		t.Errorf("first snapshot of %s names %q before it, want the start", ns, got.Previous)
	}
	if got.Previous = ""; !reflect.DeepEqual(got, want) {
		t.Errorf("snapshot of %s =\n%+v\nwant\n%+v", ns, got, want)
	}
	if got := snaps[other][0]; len(got.Workloads) != 1 || got.Workloads[0].Kind != "Pod" || got.Workloads[0].Name != "solo" || got.Labels[corev1.LabelMetadataName] != other {
		t.Errorf("snapshot of %s = %+v", other, got)
	}
	if len(snaps[own]) != 0 {
		t.Errorf("the operator's own namespace got %d snapshots", len(snaps[own]))
	}
	if n := streamCount(t, natsURL); n != 2 {
		t.Errorf("%d messages on the stream after start-up, want 2 (one per namespace)", n)
	}

	// A change the inventory reads (a Pod's labels) that leaves the
	// content as it was: built again, not published.
	built, published := counterSum(t, "crowsnest_operator_inventory_snapshots_built_total"), counterSum(t, "crowsnest_operator_inventory_snapshots_published_total")
	var p corev1.Pod
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db-0"}, &p); err != nil {
		t.Fatal(err)
	}
	p.Labels = map[string]string{"tier": "data"}
	if err := k8s.Update(ctx, &p); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the relabelled namespace built again", func() error {
		if n := counterSum(t, "crowsnest_operator_inventory_snapshots_built_total"); n <= built {
			return fmt.Errorf("%v builds", n)
		}
		return nil
	})
	if n := counterSum(t, "crowsnest_operator_inventory_snapshots_published_total"); n != published {
		t.Errorf("published %v snapshots for unchanged content", n-published)
	}
	if n := streamCount(t, natsURL); n != 2 {
		t.Errorf("%d messages on the stream after an unchanged build, want 2", n)
	}

	// The Deployment scaled to zero: its Pods go, in one burst.
	if err := k8s.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns), client.MatchingLabels(labels)); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "a snapshot without the Deployment", snapshotsOf(t, natsURL, map[string]int{ns: 2, other: 1}))
	scaled := inventorySnapshots(t, natsURL)[ns][1]
	if wantScaled := slicesWithout(want.Workloads, "Deployment"); !reflect.DeepEqual(scaled.Workloads, wantScaled) {
		t.Errorf("after the scale to zero:\n%+v\nwant\n%+v", scaled.Workloads, wantScaled)
	}

	// Scaled up again: the content is the first snapshot's, its id is not
	// (A, B, A), and the consumers get it.
	dropped := counterSum(t, "crowsnest_operator_inventory_snapshots_dropped_total")
	startWorkloadPod(t, ns, "web-7d9f-a", labels, rs, "nginx:1.27", "nginx@"+d[0])
	startWorkloadPod(t, ns, "web-7d9f-b", labels, rs, "nginx:1.27", "docker.io/library/nginx@"+d[0])
	eventually(t, 30*time.Second, "the first content again", snapshotsOf(t, natsURL, map[string]int{ns: 3, other: 1}))
	back := inventorySnapshots(t, natsURL)[ns]
	if !reflect.DeepEqual(back[2].Workloads, back[0].Workloads) || back[2].Previous == back[0].Previous {
		t.Errorf("back to the first content: %+v (previous %q), first %+v (previous %q)", back[2].Workloads, back[2].Previous, back[0].Workloads, back[0].Previous)
	}
	if n := counterSum(t, "crowsnest_operator_inventory_snapshots_dropped_total") - dropped; n != 0 {
		t.Errorf("%v snapshots dropped as duplicates", n)
	}
	if n := streamCount(t, natsURL); n != 4 {
		t.Errorf("%d messages on the stream, want 4", n)
	}

	// A restart publishes each namespace once again (Previous names the
	// start), so a consumer that missed a snapshot catches up.
	op.stop()
	published = counterSum(t, "crowsnest_operator_inventory_snapshots_published_total")
	startOperator(t, ns, "http://127.0.0.1:1", natsURL, opts)
	eventually(t, 30*time.Second, "both namespaces republished after the restart", func() error {
		if n := counterSum(t, "crowsnest_operator_inventory_snapshots_published_total") - published; n != 2 {
			return fmt.Errorf("%v republished", n)
		}
		return nil
	})
	if n := streamCount(t, natsURL); n != 6 {
		t.Errorf("%d messages on the stream after the restart, want 6", n)
	}

	// The last Pods go: one empty snapshot says nothing runs there now.
	if err := k8s.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "an empty snapshot", func() error {
		s := inventorySnapshots(t, natsURL)[ns]
		if last := s[len(s)-1]; len(last.Workloads) != 0 {
			return fmt.Errorf("%d snapshots, the last with %d workloads", len(s), len(last.Workloads))
		}
		return nil
	})
	if n := streamCount(t, natsURL); n != 7 {
		t.Errorf("%d messages on the stream, want 7", n)
	}
}

// TestInventoryOutageSendsOnlyTheLatestContent: with NATS down from the
// start, scanning goes on (the inventory publishes in its own goroutine),
// each failed publish is retried, and once NATS is back the namespace's
// content as it is then goes out once; the content that could not be sent
// while NATS was down is never sent.
func TestInventoryOutageSendsOnlyTheLatestContent(t *testing.T) {
	ns := newNamespace(t)
	api := resultsapitest.Start(t)
	server, natsURL := natstest.StartT(t)
	server.Stop()
	runPod(t, ns, "web", nil, "nginx@"+testDigest(201))
	newScanner(t, ns)
	failed := counterSum(t, "crowsnest_operator_inventory_snapshots_failed_total")
	opts := testOptions()
	opts.Inventory = inventory.Options{Enabled: true, Debounce: 200 * time.Millisecond, RetryBase: 200 * time.Millisecond, RetryMax: time.Second}
	startOperator(t, ns, api.URL, natsURL, opts)

	eventually(t, 20*time.Second, "a scan job and failed inventory publishes with NATS down", func() error {
		if n := counterSum(t, "crowsnest_operator_inventory_snapshots_failed_total") - failed; n < 2 {
			return fmt.Errorf("%v failed publishes, want retries", n)
		}
		return jobCount(t, ns, 1)()
	})
	runPod(t, ns, "api", nil, "ghcr.io/org/api@"+testDigest(202))
	// The reconciler reads the same pod cache: once it counts two images,
	// every later build sees the new Pod.
	eventually(t, 20*time.Second, "the second pod scanned with NATS still down", func() error {
		if st := getScanner(t, ns).Status; st.Images != 2 {
			return fmt.Errorf("status %+v", st)
		}
		return jobCount(t, ns, 2)()
	})

	if err := server.Restart(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "one snapshot once NATS is back", snapshotsOf(t, natsURL, map[string]int{ns: 1}))
	want := []eventsv1.InventoryWorkload{
		{Kind: "Pod", Name: "api", Containers: one("c0", "example/app", testDigest(202), 1)},
		{Kind: "Pod", Name: "web", Containers: one("c0", "example/app", testDigest(201), 1)},
	}
	if got := inventorySnapshots(t, natsURL)[ns][0].Workloads; !reflect.DeepEqual(got, want) {
		t.Errorf("delivered %+v, want the latest content %+v", got, want)
	}
}

func one(name, image, digest string, pods int) []eventsv1.InventoryContainer {
	return []eventsv1.InventoryContainer{{Name: name, Image: image, Digest: digest, Pods: pods}}
}

func slicesWithout(ws []eventsv1.InventoryWorkload, kind string) []eventsv1.InventoryWorkload {
	var out []eventsv1.InventoryWorkload
	for _, w := range ws {
		if w.Kind != kind {
			out = append(out, w)
		}
	}
	return out
}

func template(labels map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "example/app"}}}}
}

func jobTemplate() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "main", Image: "example/app"}}}}
}

func create[T client.Object](t *testing.T, obj T) T {
	t.Helper()
	if err := k8s.Create(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

func controlledBy(t testing.TB, owner client.Object) []metav1.OwnerReference {
	t.Helper()
	gvk, err := apiutil.GVKForObject(owner, scheme)
	if err != nil {
		t.Fatal(err)
	}
	return []metav1.OwnerReference{*metav1.NewControllerRef(owner, gvk)}
}

// startWorkloadPod creates a Pod controlled by owner (nil: a bare Pod) with
// container main of image, playing the kubelet: main runs imageID; each
// "name=image@imageID" of inits is an init container that ran.
func startWorkloadPod(t *testing.T, ns, name string, labels map[string]string, owner client.Object, image, imageID string, inits ...string) {
	t.Helper()
	ctx := context.Background()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: image}}}}
	if owner != nil {
		p.OwnerReferences = controlledBy(t, owner)
	}
	var initStatus []corev1.ContainerStatus
	for _, spec := range inits {
		n, rest, _ := strings.Cut(spec, "=")
		img, id, _ := strings.Cut(rest, "@")
		p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: n, Image: img})
		initStatus = append(initStatus, corev1.ContainerStatus{Name: n, Image: "docker.io/library/" + img, ImageID: id,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed"}}})
	}
	if err := k8s.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	p.Status.Phase = corev1.PodRunning
	p.Status.InitContainerStatuses = initStatus
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", Image: "docker.io/library/" + image, ImageID: imageID, Ready: true,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}}}
	if err := k8s.Status().Update(ctx, p); err != nil {
		t.Fatal(err)
	}
}

// inventorySnapshots reads every inventory snapshot on the stream, each
// checked with the contract's Parse, by namespace in stream order.
func inventorySnapshots(t testing.TB, url string) map[string][]eventsv1.InventorySnapshot {
	t.Helper()
	out := map[string][]eventsv1.InventorySnapshot{}
	for _, msg := range streamMessages(t, url) {
		if msg.Subject != eventsv1.SubjectInventorySnapshot {
			continue
		}
		ev, err := eventsv1.Parse(msg.Subject, msg.Data, time.Now(), time.Minute)
		if err != nil {
			t.Fatalf("invalid inventory event: %v", err)
		}
		var snap eventsv1.InventorySnapshot
		if err := ev.Decode(&snap); err != nil {
			t.Fatal(err)
		}
		if ev.Subject != snap.Namespace || ev.ID != eventsv1.InventoryID(snap) || msg.Header.Get(jetstream.MsgIDHeader) != ev.ID {
			t.Errorf("event %s (subject %q, Nats-Msg-Id %q) of namespace %s: want the namespace as subject and InventoryID as id",
				ev.ID, ev.Subject, msg.Header.Get(jetstream.MsgIDHeader), snap.Namespace)
		}
		out[snap.Namespace] = append(out[snap.Namespace], snap)
	}
	return out
}

// snapshotsOf is true once each namespace has exactly its count of
// snapshots.
func snapshotsOf(t testing.TB, url string, want map[string]int) func() error {
	return func() error {
		got := inventorySnapshots(t, url)
		for ns, n := range want {
			if len(got[ns]) != n {
				return fmt.Errorf("%s: %d snapshots, want %d", ns, len(got[ns]), n)
			}
		}
		return nil
	}
}

// streamMessages reads every message of the stream.
func streamMessages(t testing.TB, url string) []*nats.Msg {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, eventsv1.StreamName)
	if err != nil {
		return nil // not created yet
	}
	info, err := s.Info(ctx)
	if err != nil || info.State.Msgs == 0 {
		return nil
	}
	cons, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(int(info.State.Msgs), jetstream.FetchMaxWait(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var out []*nats.Msg
	for msg := range batch.Messages() {
		out = append(out, &nats.Msg{Subject: msg.Subject(), Data: msg.Data(), Header: msg.Headers()})
	}
	if len(out) != int(info.State.Msgs) {
		t.Fatalf("read %d of the stream's %d messages", len(out), info.State.Msgs)
	}
	return out
}

// streamCount is the number of messages the stream holds.
func streamCount(t testing.TB, url string) int {
	t.Helper()
	return len(streamMessages(t, url))
}
