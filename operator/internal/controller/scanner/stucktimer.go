package scanner

import (
	"context"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crowsnest-dev/crowsnest/operator/internal/scanjob"
)

// stuckChecks are the timed looks at running scan Jobs that could be stuck
// (stuck.go): nothing the watches see changes when a scan Pod starts to
// wait on a pull, or when a Job's Pod is refused. A check is keyed by the
// Job, not the Scanner, and is dropped when it falls due on a Job that has
// finished or gone meanwhile: at 2,000 Scanners a requeue of the Scanner
// per created Job (the grace after its creation) was a reconcile per Job
// long after the scan had ended. Only a Job that still runs has its
// Scanner reconciled, which ends it or times the next check.
type stuckChecks struct {
	reader client.Reader
	queue  workqueue.TypedDelayingInterface[types.NamespacedName]
}

func newStuckChecks(reader client.Reader) *stuckChecks {
	return &stuckChecks{reader: reader, queue: workqueue.NewTypedDelayingQueue[types.NamespacedName]()}
}

// after times a check of job; the earliest of several pending ones wins.
// A nil stuckChecks (a Reconciler built by hand in a test) times nothing.
func (c *stuckChecks) after(job types.NamespacedName, d time.Duration) {
	if c == nil {
		return
	}
	c.queue.AddAfter(job, d)
}

// Start delivers due checks of running Jobs to q, as reconciles of their
// Scanners, until ctx ends.
func (c *stuckChecks) Start(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	go func() {
		<-ctx.Done()
		c.queue.ShutDown()
	}()
	go func() {
		for {
			key, shutdown := c.queue.Get()
			if shutdown {
				return
			}
			if req, ok := c.due(ctx, key); ok {
				timedRequeues.WithLabelValues("stuck").Inc()
				scannerWakeups.WithLabelValues(wakeupStuck).Inc()
				q.Add(req)
			}
			c.queue.Done(key)
		}
	}()
	return nil
}

// due returns the reconcile of the Scanner of job when job still runs.
func (c *stuckChecks) due(ctx context.Context, key types.NamespacedName) (reconcile.Request, bool) {
	var job batchv1.Job
	if err := c.reader.Get(ctx, key, &job); err != nil {
		// Gone (or the cache cannot say): a Job that went has nothing
		// left to end, and its going is a watched change.
		return reconcile.Request{}, false
	}
	scanner := job.Labels[scanjob.LabelScanner]
	if scanner == "" || !jobRunning(&job) {
		return reconcile.Request{}, false
	}
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: job.Namespace, Name: scanner}}, true
}

func (c *stuckChecks) String() string { return "stuck checks of scan jobs" }
