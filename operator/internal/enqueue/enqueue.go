// Package enqueue holds the event handler both controllers use to coalesce
// status-only wake-ups: requests due after a delay, so that the work queue
// (one pending request per object, due at the earliest time) merges a
// burst of them into one reconcile.
package enqueue

import (
	"context"
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// StatusDelay is how long a ClusterScanner may take to sum its generated
// Scanners' new counts, and at least how long a Scanner may take to hear of
// a scan Job another Scanner owns (it starts, ends or goes). Such wake-ups
// are coalesced over it: a namespace that runs a hundred digests scanned in
// the same minute reconciles a few times, not three hundred, and a
// ClusterScanner over 2,000 namespaces sums their counts once per
// StatusDelay, not once per scan.
const StatusDelay = 5 * time.Second

// After is handler.EnqueueRequestsFromMapFunc whose requests are due after
// delay(), asked once per event.
func After(delay func() time.Duration, fn handler.MapFunc) handler.EventHandler {
	add := func(ctx context.Context, obj client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		if obj == nil {
			return
		}
		d := delay()
		for _, req := range fn(ctx, obj) {
			q.AddAfter(req, d)
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, e.Object, q)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, e.ObjectNew, q)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, e.Object, q)
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, e.Object, q)
		},
	}
}
