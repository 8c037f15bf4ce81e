package enqueue

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// TestAfterCoalesces: every kind of event enqueues the mapped requests
// after the delay, and a burst of them is one pending request.
func TestAfterCoalesces(t *testing.T) {
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	want := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "a", Name: "default"}}
	h := After(func() time.Duration { return 200 * time.Millisecond }, func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{want}
	})
	obj := &corev1.Pod{}
	ctx := context.Background()
	h.Create(ctx, event.CreateEvent{Object: obj}, q)
	h.Update(ctx, event.UpdateEvent{ObjectOld: obj, ObjectNew: obj}, q)
	h.Delete(ctx, event.DeleteEvent{Object: obj}, q)
	h.Generic(ctx, event.GenericEvent{Object: obj}, q)
	h.Generic(ctx, event.GenericEvent{}, q) // no object: nothing
	if n := q.Len(); n != 0 {
		t.Fatalf("%d requests due at once, want none before the delay", n)
	}
	time.Sleep(400 * time.Millisecond)
	if n := q.Len(); n != 1 {
		t.Fatalf("%d requests after the delay, want the burst coalesced into 1", n)
	}
	if got, _ := q.Get(); got != want {
		t.Errorf("got %v, want %v", got, want)
	}
}
