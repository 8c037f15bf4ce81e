package scanner

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
	"github.com/crowsnest-dev/crowsnest/operator/internal/podcache"
)

// Two watches map a change to a namespace rather than to a Scanner:
// workload Pods (podSource) and other Scanners' scan Jobs
// (scannersOfDigest). Both then list the namespace's Scanners. That list
// reads the cache and should not fail, but when it does (the cache not
// synced yet, an informer error) the change would be lost until an
// unrelated event: a new digest would wait unscanned. So a failed list is
// logged, counted (crowsnest_operator_scanner_list_errors_total) and
// retried with backoff until it succeeds.

// Watches whose Scanner lists can fail, the metric's label.
const (
	watchPods = "pods"
	watchJobs = "jobs"
)

// The backoff of a failed Scanner list: doubling from listRetryBase to
// listRetryMax per namespace, reset by a success.
const (
	listRetryBase = 100 * time.Millisecond
	listRetryMax  = time.Minute
)

// listRetry is a namespace whose Scanners could not be listed, and the
// watch that wanted them.
type listRetry struct {
	namespace, watch string
}

// namespaceScanners turns a namespace into reconcile requests of its
// Scanners, retrying a failed list with backoff.
type namespaceScanners struct {
	reader client.Reader
	// idx, when set, is the Scanner informer's indexer (a cluster-wide
	// cache): its namespace index answers without a List, which cost a
	// new ScannerList and a reflected copy per call — 780,000 calls, a
	// GB allocated, in a 100,000-Pod run (each Job event, ~40 peers).
	idx     toolscache.Indexer
	limiter workqueue.TypedRateLimiter[listRetry]
	retries workqueue.TypedDelayingInterface[listRetry]
}

func newNamespaceScanners(reader client.Reader) *namespaceScanners {
	return &namespaceScanners{
		reader:  reader,
		limiter: workqueue.NewTypedItemExponentialFailureRateLimiter[listRetry](listRetryBase, listRetryMax),
		retries: workqueue.NewTypedDelayingQueue[listRetry](),
	}
}

// requests lists ns's Scanners for watch. On failure it logs, counts and
// schedules a retry (delivered by run), and returns none.
func (n *namespaceScanners) requests(ctx context.Context, ns, watch string) []reconcile.Request {
	reqs, err := n.list(ctx, ns)
	if err != nil {
		n.failed(ctx, listRetry{namespace: ns, watch: watch}, err)
		return nil
	}
	return reqs
}

func (n *namespaceScanners) list(ctx context.Context, ns string) ([]reconcile.Request, error) {
	if n.idx != nil {
		objs, err := n.idx.ByIndex(toolscache.NamespaceIndex, ns)
		if err != nil {
			return nil, err
		}
		reqs := make([]reconcile.Request, 0, len(objs))
		for _, o := range objs {
			if s, ok := o.(*crowsnestv1alpha1.Scanner); ok {
				reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: s.Namespace, Name: s.Name}})
			}
		}
		return reqs, nil
	}
	var list crowsnestv1alpha1.ScannerList
	// Only the names are read: no copies (a Job's start or end lists the
	// Scanners of each of the ~40 namespaces that run its digest).
	if err := n.reader.List(ctx, &list, client.InNamespace(ns), client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, s := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: s.Namespace, Name: s.Name}})
	}
	return reqs, nil
}

func (n *namespaceScanners) failed(ctx context.Context, key listRetry, err error) {
	scannerListErrors.WithLabelValues(key.watch).Inc()
	if ctx.Err() != nil {
		return // shutting down: nothing to retry for
	}
	d := n.limiter.When(key)
	log.FromContext(ctx).Error(err, "list scanners of a namespace to reconcile them; retrying",
		"namespace", key.namespace, "watch", key.watch, "retry_in", d)
	n.retries.AddAfter(key, d)
}

// run delivers the retried lists' requests to q until ctx ends.
func (n *namespaceScanners) run(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	go func() {
		<-ctx.Done()
		n.retries.ShutDown()
	}()
	for {
		key, shutdown := n.retries.Get()
		if shutdown {
			return
		}
		if reqs, err := n.list(ctx, key.namespace); err != nil {
			n.failed(ctx, key, err)
		} else {
			n.limiter.Forget(key)
			for _, req := range reqs {
				q.Add(req)
			}
		}
		n.retries.Done(key)
	}
}

// podSource turns the pod cache's changes into reconciles of the Scanners
// of the Pod's namespace. It also runs the retries of failed Scanner lists
// (namespaceScanners), which need the controller's queue.
type podSource struct {
	pods     *podcache.Cache
	scanners *namespaceScanners
}

func (s podSource) Start(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	go s.scanners.run(ctx, q)
	return s.pods.OnChange(func(namespace string) {
		for _, req := range s.scanners.requests(ctx, namespace, watchPods) {
			scannerWakeups.WithLabelValues(wakeupPods).Inc()
			q.Add(req)
		}
	})
}

func (s podSource) WaitForSync(ctx context.Context) error { return s.pods.WaitForSync(ctx) }

func (s podSource) String() string { return "workload pods" }
