package scanner

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crowsnest-dev/crowsnest/operator/internal/scanjob"
)

// failingLists is the suite's real client, except that its first lists
// fail. It is a stand-in for an API error: the manager's cache serves a
// list of a cached kind from memory, and nothing makes it fail on demand
// (it fails while not synced, or for a kind whose informer errs).
type failingLists struct {
	client.Reader
	left atomic.Int32
}

func (f *failingLists) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if f.left.Add(-1) >= 0 {
		return apierrors.NewServiceUnavailable("stand-in: the list fails")
	}
	return f.Reader.List(ctx, list, opts...)
}

// queuedWithin waits for the next request in q, or fails after d.
func queuedWithin(t *testing.T, q workqueue.TypedRateLimitingInterface[reconcile.Request], d time.Duration) reconcile.Request {
	t.Helper()
	got := make(chan reconcile.Request, 1)
	go func() {
		if req, shutdown := q.Get(); !shutdown {
			q.Done(req)
			got <- req
		}
	}()
	select {
	case req := <-got:
		return req
	case <-time.After(d):
		q.ShutDown()
		t.Fatalf("no reconcile queued within %v", d)
		return reconcile.Request{}
	}
}

// TestFailedScannerListIsRetried: a Pod change (podSource) and another
// Scanner's Job (scannersOfDigest) each map to a namespace whose Scanners
// are listed; when that list fails, the change is not lost: it is counted
// and the Scanner is reconciled once a retry's list succeeds. Before, both
// dropped the error and the Scanner heard of nothing.
func TestFailedScannerListIsRetried(t *testing.T) {
	ns := newNamespace(t)
	newScanner(t, ns)
	want := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: "default"}}
	pods := startPodCache(t, ns)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)

	for _, tt := range []struct {
		watch   string
		trigger func(*Reconciler, workqueue.TypedRateLimitingInterface[reconcile.Request])
	}{
		{watchPods, func(r *Reconciler, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if err := (podSource{pods: r.pods, scanners: r.namespaces}).Start(ctx, q); err != nil {
				t.Fatal(err)
			}
			// A new Pod, never started: one change, one list.
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example/app"}}}}
			if err := k8s.Create(ctx, pod); err != nil {
				t.Fatal(err)
			}
		}},
		{watchJobs, func(r *Reconciler, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			runPod(t, ns, "runner", nil, "docker.io/library/app@"+testDigest(1))
			eventually(t, 10*time.Second, "digest in the pod cache", func() error {
				if len(r.pods.Running(testDigest(1))) == 0 {
					return errors.New("not running yet")
				}
				return nil
			})
			go r.namespaces.run(ctx, q)
			job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "elsewhere", Name: "scan",
				Annotations: map[string]string{scanjob.AnnotationDigest: testDigest(1)}}}
			if reqs := r.scannersOfDigest(ctx, job); len(reqs) != 0 {
				t.Fatalf("requests %v from a failed list", reqs)
			}
		}},
	} {
		t.Run(tt.watch, func(t *testing.T) {
			reader := &failingLists{Reader: k8s}
			reader.left.Store(2) // the first list and the first retry fail
			r := &Reconciler{pods: pods, namespaces: newNamespaceScanners(reader)}
			q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
			t.Cleanup(q.ShutDown)
			before := counterOf(t, "crowsnest_operator_scanner_list_errors_total", "watch", tt.watch)

			tt.trigger(r, q)
			if got := queuedWithin(t, q, 10*time.Second); got != want {
				t.Fatalf("reconciled %v, want %v", got, want)
			}
			if n := counterOf(t, "crowsnest_operator_scanner_list_errors_total", "watch", tt.watch) - before; n != 2 {
				t.Errorf("%v list errors counted, want 2 (the list and its first retry)", n)
			}

		})
	}
}
