package scanner

import (
	"context"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crowsnest-dev/crowsnest/operator/internal/enqueue"
)

// A scan Job speaks for its digest in the whole cluster, so the Scanners of
// every other namespace that runs the digest (its peers) hear of it: their
// counts change when it starts and ends, and when it is gone they may have
// to scan the digest themselves. With a ClusterScanner over 2,000
// namespaces a digest has ~40 peers and each namespace ~100 digests scanned
// over minutes, so a peer hears of other Scanners' Jobs all the time.
// Those wake-ups are coalesced per Scanner over peerDelay (long with many
// Scanners), except the one that ends the last scan a Scanner waits for:
// then it reconciles after enqueue.StatusDelay, so that its status says
// "all scanned" within seconds, not at the end of the window. What it
// waits for is counted by its own reconciles (waiting: its queued and
// scanning images) and counted down by the peers' Jobs that end.

// waitingCounts is, per Scanner, how many of its images its last reconcile
// found waiting for a report (queued or scanning), less the other
// Scanners' Jobs for its digests that ended since. It only decides how soon
// a peer wake-up is due: a count that is off costs an early or a late (by
// at most peerDelay) reconcile, never a missed one.
type waitingCounts struct {
	mu sync.Mutex
	n  map[types.NamespacedName]int
}

// set records what key's reconcile found waiting.
func (w *waitingCounts) set(key types.NamespacedName, waiting int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n == nil {
		w.n = map[types.NamespacedName]int{}
	}
	if waiting <= 0 {
		delete(w.n, key)
		return
	}
	w.n[key] = waiting
}

// forget drops a Scanner that is gone.
func (w *waitingCounts) forget(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.n, key)
}

// ended counts one of key's waiting images down (a peer's Job for it
// ended) and tells whether that was the last one.
func (w *waitingCounts) ended(key types.NamespacedName) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, ok := w.n[key]
	if !ok {
		return false
	}
	if n <= 1 {
		delete(w.n, key)
		return true
	}
	w.n[key] = n - 1
	return false
}

// jobEnded tells whether a Job's change is its end: it ran, and now it has
// finished, is being deleted, or is gone (new nil).
func jobEnded(old, new client.Object) bool {
	o, ok := old.(*batchv1.Job)
	if !ok || jobOutcome(o, nil).phase != jobActive {
		return false
	}
	if new == nil {
		return true
	}
	n, ok := new.(*batchv1.Job)
	return ok && jobOutcome(n, nil).phase != jobActive
}

// peerHandler enqueues the Scanners peers maps a scan Job to
// (scannersOfDigest) after delay(), or after settled for those whose last
// waiting image this Job's end settles (waiting). The work queue keeps one
// pending request per Scanner, due at the earliest time asked: the peer
// Jobs that end within a Scanner's window are one reconcile of it.
func peerHandler(peers handler.MapFunc, waiting *waitingCounts, delay func() time.Duration, settled time.Duration) handler.EventHandler {
	add := func(ctx context.Context, obj client.Object, ended bool, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		if obj == nil {
			return
		}
		d := delay()
		reqs := peers(ctx, obj)
		scannerWakeups.WithLabelValues(wakeupPeerJob).Add(float64(len(reqs)))
		for _, req := range reqs {
			due := d
			if ended && waiting.ended(req.NamespacedName) {
				due = min(d, settled)
			}
			q.AddAfter(req, due)
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			// A Job first seen ended (a late watch, a relist) ended too.
			add(ctx, e.Object, e.Object != nil && !runningJob(e.Object), q)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, e.ObjectNew, jobEnded(e.ObjectOld, e.ObjectNew), q)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, e.Object, jobEnded(e.Object, nil), q)
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, e.Object, false, q)
		},
	}
}

// peerWakeupsPerSecond bounds, cluster-wide, how many Scanners per second
// wake for other Scanners' Jobs while a wave of scans runs: each such
// reconcile writes its status when its counts changed. maxPeerDelay caps
// the resulting staleness of the counts in between; the end of a
// Scanner's last waiting scan is not held back by it (waitingCounts).
const (
	peerWakeupsPerSecond = 10
	maxPeerDelay         = 2 * time.Minute
)

// peerDelay is how long a Scanner may take to hear of another Scanner's
// Job: enqueue.StatusDelay, or longer when there are more Scanners than
// peerWakeupsPerSecond × enqueue.StatusDelay (2 min at 2,000).
func (r *Reconciler) peerDelay() time.Duration {
	n := time.Duration(r.scannerCount.Load())
	return min(max(enqueue.StatusDelay, n*time.Second/peerWakeupsPerSecond), maxPeerDelay)
}
