package scanner

import (
	"context"
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
	"github.com/crowsnest-dev/crowsnest/operator/internal/scanjob"
	"github.com/crowsnest-dev/crowsnest/test/support/resultsapitest"
)

// TestOwnJobsCostOneReconcileEach: a Scanner hears of its own scan Jobs
// when they end, not when it creates them, not when it deletes them after
// recording their outcome (nothing waits for them to go), and not through
// the watch that tells the other Scanners of the digest. Once its Jobs run,
// n Jobs that end one after the other cost one reconcile each, and the
// status ends right. (Before: the end, the deletion and the peer watch's
// window: 10 or more for 5 Jobs.)
func TestOwnJobsCostOneReconcileEach(t *testing.T) {
	api := resultsapitest.Start(t)
	ns := newNamespace(t)
	const n = 5
	for i := range n {
		runPod(t, ns, fmt.Sprintf("app-%d", i), nil, "ghcr.io/org/app@"+testDigest(0x700+i))
	}
	newScanner(t, ns, func(s *crowsnestv1alpha1.ScannerSpec) { s.MaxConcurrentScans = 10 })
	startOperator(t, ns, api.URL, "", testOptions())

	eventually(t, 30*time.Second, "a scan Job per digest, counted as scanning", func() error {
		if got := len(scanJobs(t, ns)); got != n {
			return fmt.Errorf("%d scan Jobs, want %d", got, n)
		}
		if st := getScanner(t, ns).Status; st.Scanning != n {
			return fmt.Errorf("scanning %d, want %d", st.Scanning, n)
		}
		return nil
	})
	// Past what the creation itself may still bring (the peer watch's
	// window, enqueue.StatusDelay, on the old code).
	time.Sleep(6 * time.Second)
	before := counterSum(t, "controller_runtime_reconcile_total")
	for _, job := range scanJobs(t, ns) {
		putReport(t, api, job.Annotations[scanjob.AnnotationDigest])
		finishJob(t, &job, true, nil, nil)
		eventually(t, 20*time.Second, "the finished Job recorded and deleted", func() error {
			err := k8s.Get(context.Background(), client.ObjectKeyFromObject(&job), &batchv1.Job{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("job %s: %w", job.Name, err)
			}
			return fmt.Errorf("job %s still there", job.Name)
		})
	}
	eventually(t, 20*time.Second, "status: all scanned", func() error {
		st := getScanner(t, ns).Status
		if st.Images != n || st.Scanned != n || st.Scanning != 0 || st.Queued != 0 {
			return fmt.Errorf("images %d scanned %d scanning %d queued %d", st.Images, st.Scanned, st.Scanning, st.Queued)
		}
		return nil
	})
	// Past the peer watch's window (enqueue.StatusDelay) after the last end.
	time.Sleep(6 * time.Second)
	got := counterSum(t, "controller_runtime_reconcile_total") - before
	if limit := n + 1; got > float64(limit) {
		t.Errorf("%v reconciles for %d Jobs' ends, want at most %d", got, n, limit)
	}
	t.Logf("%v reconciles for %d Jobs' ends", got, n)
}

// TestStuckCheckOnlyForRunningJobs: a stuck check that falls due wakes the
// Scanner of a Job that still runs, and nothing for a Job that has ended or
// gone: the check is keyed by the Job, so a Job that ended long before its
// grace ran out costs no reconcile then.
func TestStuckCheckOnlyForRunningJobs(t *testing.T) {
	f := newStuckFixture(t, 0)
	ctx := context.Background()
	checks := newStuckChecks(k8s)
	key := client.ObjectKeyFromObject(f.job)
	req, ok := checks.due(ctx, key)
	if want := (reconcile.Request{NamespacedName: types.NamespacedName{Namespace: f.s.Namespace, Name: f.s.Name}}); !ok || req != want {
		t.Fatalf("running Job: %v %v, want a reconcile of %v", req, ok, want)
	}
	finishJob(t, f.job, true, nil, nil)
	if req, ok := checks.due(ctx, key); ok {
		t.Errorf("finished Job: a reconcile of %v", req)
	}
	deleteAsTTL(t, f.job)
	if err := k8s.Get(ctx, key, f.job); err != nil {
		t.Fatal(err)
	}
	f.job.Finalizers = nil // no operator here to release it
	if err := k8s.Update(ctx, f.job); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the Job gone", func() error {
		switch err := k8s.Get(ctx, key, &batchv1.Job{}); {
		case apierrors.IsNotFound(err):
		case err != nil:
			return err
		default:
			return fmt.Errorf("still there")
		}
		return nil
	})
	if req, ok := checks.due(ctx, key); ok {
		t.Errorf("deleted Job: a reconcile of %v", req)
	}
}

// TestPeerStatusRightAfterPeerJobs: a Scanner whose digests another
// Scanner's Jobs scan counts them as scanning, then as scanned once those
// Jobs end, without a Job of its own.
func TestPeerStatusRightAfterPeerJobs(t *testing.T) {
	api := resultsapitest.Start(t)
	a, b := newNamespace(t), newNamespace(t)
	const n = 4
	for i := range n {
		runPod(t, a, fmt.Sprintf("app-%d", i), nil, "ghcr.io/org/app@"+testDigest(0x720+i))
	}
	newScanner(t, a, func(s *crowsnestv1alpha1.ScannerSpec) { s.MaxConcurrentScans = 10 })
	opts := testOptions()
	opts.WatchNamespaces = []string{a, b}
	startOperator(t, a, api.URL, "", opts)
	eventually(t, 20*time.Second, "a's Jobs", func() error {
		if got := len(scanJobs(t, a)); got != n {
			return fmt.Errorf("%d scan Jobs in %s, want %d", got, a, n)
		}
		return nil
	})
	// b runs the same digests: a's Jobs speak for them.
	for i := range n {
		runPod(t, b, fmt.Sprintf("app-%d", i), nil, "ghcr.io/org/app@"+testDigest(0x720+i))
	}
	newScanner(t, b, func(s *crowsnestv1alpha1.ScannerSpec) { s.MaxConcurrentScans = 10 })
	eventually(t, 20*time.Second, "b counts a's Jobs as scanning", func() error {
		st := getScanner(t, b).Status
		if st.Images != n || st.Scanning != n || st.Queued != 0 {
			return fmt.Errorf("b: images %d scanning %d queued %d", st.Images, st.Scanning, st.Queued)
		}
		return nil
	})
	for _, job := range scanJobs(t, a) {
		putReport(t, api, job.Annotations[scanjob.AnnotationDigest])
		finishJob(t, &job, true, nil, nil)
	}
	eventually(t, 20*time.Second, "b: all scanned, no Job of its own", func() error {
		st := getScanner(t, b).Status
		if st.Images != n || st.Scanned != n || st.Scanning != 0 || st.Queued != 0 {
			return fmt.Errorf("b: images %d scanned %d scanning %d queued %d", st.Images, st.Scanned, st.Scanning, st.Queued)
		}
		if jobs := scanJobs(t, b); len(jobs) != 0 {
			return fmt.Errorf("b has %d scan Jobs of its own", len(jobs))
		}
		return nil
	})
}

// TestPeerEndsCoalesce: the ends of other Scanners' Jobs for a Scanner's
// digests wake it once per window, and the end of the last image it waits
// for is due at once (after settled), not at the window's end; starts and
// other changes do not count down.
func TestPeerEndsCoalesce(t *testing.T) {
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	peer := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "b", Name: "default"}}
	var waiting waitingCounts
	waiting.set(peer.NamespacedName, 5)
	h := peerHandler(func(context.Context, client.Object) []reconcile.Request { return []reconcile.Request{peer} },
		&waiting, func() time.Duration { return time.Hour }, 200*time.Millisecond)
	ctx := context.Background()
	running := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "a"}}
	done := running.DeepCopy()
	setFinished(done, true)
	recorded := done.DeepCopy()
	recorded.Annotations = map[string]string{scanjob.AnnotationOutcome: "succeeded"}

	h.Create(ctx, event.CreateEvent{Object: running}, q)
	for range 4 {
		h.Update(ctx, event.UpdateEvent{ObjectOld: running, ObjectNew: done}, q)
		h.Update(ctx, event.UpdateEvent{ObjectOld: done, ObjectNew: recorded}, q) // not an end
	}
	time.Sleep(500 * time.Millisecond)
	if got := q.Len(); got != 0 {
		t.Fatalf("%d requests due after 4 of 5 ends, want none before the window", got)
	}
	// The fifth: a Job deleted while it ran ends too.
	h.Delete(ctx, event.DeleteEvent{Object: running}, q)
	time.Sleep(500 * time.Millisecond)
	if got := q.Len(); got != 1 {
		t.Fatalf("%d requests due after the last waiting image's Job ended, want 1", got)
	}
	if got, _ := q.Get(); got != peer {
		t.Errorf("got %v, want %v", got, peer)
	} else {
		q.Done(got)
	}
	// Counted out: further ends wait for the window again.
	h.Update(ctx, event.UpdateEvent{ObjectOld: running, ObjectNew: done}, q)
	time.Sleep(300 * time.Millisecond)
	if got := q.Len(); got != 0 {
		t.Errorf("%d requests due for an end past the count, want none before the window", got)
	}
	if jobEnded(done, recorded) || jobEnded(done, nil) || !jobEnded(running, done) {
		t.Error("jobEnded: only a running Job's end or deletion is an end")
	}
}

// TestOwnJobPredicate: what of its own Jobs reconciles a Scanner: a
// creation only when the cache first shows the Job already ended (a late
// watch event); a phase change or deletion, not another status change or
// an annotation; a deletion unless the Scanner retired the Job itself.
func TestOwnJobPredicate(t *testing.T) {
	r := &Reconciler{}
	p := r.ownJobChanged()
	running := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "a", UID: "u1"}}
	ready := running.DeepCopy()
	ready.Status.Active, ready.Status.Ready = 1, ptrTo(int32(1))
	done := running.DeepCopy()
	setFinished(done, true)
	annotated := done.DeepCopy()
	annotated.Annotations = map[string]string{scanjob.AnnotationOutcome: "succeeded"}
	for _, tt := range []struct {
		name string
		got  bool
		want bool
	}{
		{"created running", p.Create(event.CreateEvent{Object: running}), false},
		{"created already ended", p.Create(event.CreateEvent{Object: done}), true},
		{"active and ready counts", p.Update(event.UpdateEvent{ObjectOld: running, ObjectNew: ready}), false},
		{"ended", p.Update(event.UpdateEvent{ObjectOld: ready, ObjectNew: done}), true},
		{"outcome annotation", p.Update(event.UpdateEvent{ObjectOld: done, ObjectNew: annotated}), false},
		{"deleted by someone else", p.Delete(event.DeleteEvent{Object: annotated}), true},
	} {
		if tt.got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, tt.got, tt.want)
		}
	}
	r.retired.Store(annotated.UID, struct{}{})
	if p.Delete(event.DeleteEvent{Object: annotated}) {
		t.Error("a Job the Scanner retired itself: its deletion reconciles it")
	}
	if p.Delete(event.DeleteEvent{Object: annotated}) != true {
		t.Error("the retired mark is used once")
	}
}

func ptrTo[T any](v T) *T { return &v }
