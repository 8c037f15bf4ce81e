package scanner

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"

	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
	"github.com/crowsnest-dev/crowsnest/operator/internal/bus"
	"github.com/crowsnest-dev/crowsnest/operator/internal/inventory"
	"github.com/crowsnest-dev/crowsnest/operator/internal/podcache"
	"github.com/crowsnest-dev/crowsnest/operator/internal/scanbudget"
	"github.com/crowsnest-dev/crowsnest/operator/internal/scanjob"
)

// Lookup answers which digests have a report (resultsclient.Client).
type Lookup interface {
	Lookup(ctx context.Context, want map[string]time.Time) (map[string]time.Time, error)
	// Forget drops a digest's cached answer once its report is deleted.
	Forget(digest string)
}

// Options are the operator-wide settings the controller applies.
type Options struct {
	// InsecureRegistries go into every scan Job (scanjob.Params).
	InsecureRegistries []string
	GrypeImage         string
	UploaderImage      string
	UploaderAPIURL     string // results-api URL as seen from scan Pods
	VulnDBURL          string // Grype's DB listing base URL for scan Jobs (the matcher); empty: Grype's default
	ServiceAccount     string
	JobTTL             time.Duration
	RetryBase          time.Duration // first wait after a failed scan
	RetryMax           time.Duration
	LookupRetry        time.Duration // first wait after a failed lookup; doubles to lookupRetryMax
	PublishRetry       time.Duration // wait before retrying undelivered events
	Workers            int           // Scanners reconciled in parallel
	StuckGrace         time.Duration // how long a scan Pod may wait on an image pull or container config, or a Job without Pods, before it is ended (stuck.go); 0 disables
	// MaxConcurrentScans caps the scan Jobs running at once in the whole
	// cluster, on top of each Scanner's cap; 0 is no cluster-wide cap.
	MaxConcurrentScans int
	// RescanJitter spreads rescans: each digest's rescan interval moves by
	// up to ±RescanJitter of it (0.1: ±10%), the same for a digest every
	// time.
	RescanJitter float64
	// RescansPerMinute caps how many rescans start per minute in the whole
	// cluster; 0 is no cap.
	RescansPerMinute int
	// ScanPod is the operator-wide default of where scan Pods run
	// (--scan-pod-*); a Scanner's spec.scanPod replaces it field by field.
	ScanPod scanjob.Scheduling
	// WatchNamespaces are the only namespaces whose Scanners are served
	// and where scan Jobs are created; empty is every namespace. The
	// manager's cache must be restricted to the same (CacheOptions).
	WatchNamespaces []string
	// Inventory publishes crowsnest.inventory.snapshot per namespace when
	// Inventory.Enabled and events go somewhere; its Namespaces are
	// WatchNamespaces.
	Inventory inventory.Options
}

// Reconciler reconciles Scanners. Setup builds it.
type Reconciler struct {
	client.Client
	// APIReader reads Jobs straight from the API server: the concurrency cap
	// must count a Job created a moment ago, which the cache may not show yet.
	APIReader client.Reader
	Recorder  events.EventRecorder
	Lookup    Lookup
	Publisher bus.Publisher
	Options   Options
	Now       func() time.Time

	// jobIndex reads the cached scan Jobs by their indexes.
	jobIndex jobReader
	// pods are the workload Pods, read in place.
	pods *podcache.Cache
	// platforms are the nodes' os/arch.
	platforms platforms
	// rescans are extra reconcile triggers (deletedReports.Events).
	rescans <-chan event.GenericEvent
	// budget is the cluster-wide state every Scanner's reconcile shares:
	// claims on digests, the cluster-wide cap, the rescan rate.
	budget *scanbudget.Budget
	// wakeups carries the reconciles of Scanners the budget gives a free
	// slot to.
	wakeups chan event.GenericEvent
	// stuckChecks time the looks at running Jobs that could be stuck.
	stuckChecks *stuckChecks
	// namespaces turns a namespace into reconciles of its Scanners (the
	// Pod and peer-Job watches), retrying failed lists.
	namespaces *namespaceScanners

	// retired are the UIDs of Jobs a Scanner deleted with nothing waiting
	// for them to go: their deletion is not a reconcile of it
	// (ownJobChanged).
	retired sync.Map

	// scanners are the Scanners reconciled so far (not yet gone), counted
	// for peerDelay.
	scanners     sync.Map
	scannerCount atomic.Int64
	// waiting counts each Scanner's images waiting for a scan, for how
	// soon its peers' Jobs wake it (peers.go).
	waiting waitingCounts

	mu             sync.Mutex
	lookupFailures map[types.NamespacedName]int
	notPermitted   map[types.NamespacedName]notPermitted
}

// +kubebuilder:rbac:groups=crowsnest.dev,resources=scanners,verbs=get;list;watch
// +kubebuilder:rbac:groups=crowsnest.dev,resources=scanners/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=crowsnest.dev,resources=scanners/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=create;get;list;watch;delete;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=selfsubjectaccessreviews,verbs=create

// Reconcile observes, decides and acts, and patches the status once, in a
// defer, on every path after the Scanner was read: a failure that repeats
// must show in the status rather than leave the last success's conditions.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, retErr error) {
	var s crowsnestv1alpha1.Scanner
	if err := r.Get(ctx, req.NamespacedName, &s); err != nil {
		if apierrors.IsNotFound(err) {
			if _, ok := r.scanners.LoadAndDelete(req.NamespacedName); ok {
				r.scannerCount.Add(-1)
			}
			r.lookupFailed(req.NamespacedName, false)
			r.waiting.forget(req.NamespacedName)
			r.stall(req.NamespacedName, nil, "")
			r.budget.Forget(req.NamespacedName)
			deleteGauges(req.Namespace, req.Name)
			// Its Jobs go with it through owner references, once their
			// finalizers are off.
			return ctrl.Result{}, r.releaseJobs(ctx, req.Namespace, req.Name)
		}
		return ctrl.Result{}, fmt.Errorf("get scanner: %w", err)
	}
	if !s.DeletionTimestamp.IsZero() {
		// A foreground deletion waits for the Jobs, which wait for their
		// finalizers.
		return ctrl.Result{}, r.releaseJobs(ctx, s.Namespace, s.Name)
	}
	if _, known := r.scanners.LoadOrStore(req.NamespacedName, struct{}{}); !known {
		r.scannerCount.Add(1)
	}
	before := s.DeepCopy()
	var out outcome
	defer func() {
		out.reconcileErr = retErr
		setStatus(&s, out)
		setGauges(&s)
		if err := r.patchStatus(ctx, before, &s); err != nil {
			retErr = errors.Join(retErr, err)
		}
	}()

	if why := r.stalledWhy(req.NamespacedName, &s); why != "" {
		out.notPermitted = why
		return ctrl.Result{}, nil
	}
	if !r.Options.watches(s.Namespace) {
		out.notPermitted = "it is not one of the operator's --watch-namespaces"
		r.notPermittedNow(ctx, req.NamespacedName, &s, out.notPermitted)
		return ctrl.Result{}, nil
	}
	var err error
	if out, err = r.reconcile(ctx, &s); err != nil {
		why, reviewErr := r.forbidden(ctx, &s, err)
		if why == "" {
			return ctrl.Result{}, errors.Join(err, reviewErr)
		}
		out = outcome{notPermitted: why}
		r.notPermittedNow(ctx, req.NamespacedName, &s, why)
		return ctrl.Result{}, nil
	}
	r.stall(req.NamespacedName, &s, "")
	r.waiting.set(req.NamespacedName, out.plan.queued+out.plan.scanning)
	return r.requeue(ctx, req.NamespacedName, out), nil
}

// reconcile is observe → decide → act.
func (r *Reconciler) reconcile(ctx context.Context, s *crowsnestv1alpha1.Scanner) (outcome, error) {
	obs, err := r.observe(ctx, s)
	if err != nil {
		return outcome{}, err
	}
	p := decide(obs.observed)
	eventsErr, err := r.act(ctx, s, obs, &p)
	if err != nil {
		return outcome{}, err
	}
	return outcome{plan: p, lookupErr: obs.lookupErr, eventsErr: eventsErr}, nil
}

// requeue says when to run again without a watch event: at the plan's next
// timed event, after the lookup backoff, or to retry undelivered events,
// whichever is first.
func (r *Reconciler) requeue(ctx context.Context, key types.NamespacedName, out outcome) ctrl.Result {
	logger := log.FromContext(ctx)
	res := ctrl.Result{RequeueAfter: out.plan.requeueAfter}
	why := "scheduled"
	if out.lookupErr != nil {
		n := r.lookupFailed(key, true)
		res.RequeueAfter, why = backoff{base: r.Options.LookupRetry, max: lookupRetryMax}.delay(n), "lookup"
		logger.Info("results-api lookup failed; no scan Jobs created", "error", out.lookupErr.Error(), "retry_in", res.RequeueAfter)
	} else {
		r.lookupFailed(key, false)
	}
	if out.eventsErr != nil && (res.RequeueAfter == 0 || r.Options.PublishRetry < res.RequeueAfter) {
		res.RequeueAfter, why = r.Options.PublishRetry, "events"
		logger.Info("events not delivered; retrying", "error", out.eventsErr.Error(), "retry_in", res.RequeueAfter)
	}
	if res.RequeueAfter > 0 {
		timedRequeues.WithLabelValues(why).Inc()
	}
	return res
}

// patchStatus writes s.Status with a merge patch of the status subresource
// when it differs from before's.
func (r *Reconciler) patchStatus(ctx context.Context, before, s *crowsnestv1alpha1.Scanner) error {
	if equality.Semantic.DeepEqual(before.Status, s.Status) {
		return nil
	}
	patch, err := statusPatch(&before.Status, &s.Status)
	if err != nil {
		return err
	}
	// A Scanner deleted meanwhile has no status left to write.
	if err := client.IgnoreNotFound(r.Status().Patch(ctx, s, client.RawPatch(types.MergePatchType, patch))); err != nil {
		return fmt.Errorf("patch scanner status: %w", err)
	}
	return nil
}

// lookupRetryMax caps the wait between results-api lookups while they
// fail. It bounds how long scanning stays paused after results-api (or its
// database) is back: with a 5-minute cap, a 3-minute Postgres outage left
// the scans waiting up to 5m23s after Postgres returned (e2e
// TestPostgresOutage). One failing lookup a minute per Scanner (each bounded by
// --lookup-timeout) is little load on a results-api that is down.
const lookupRetryMax = time.Minute

// lookupFailed counts consecutive lookup failures of a Scanner (failed) or
// resets the count; it returns the count.
func (r *Reconciler) lookupFailed(key types.NamespacedName, failed bool) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lookupFailures == nil {
		r.lookupFailures = map[types.NamespacedName]int{}
	}
	if !failed {
		delete(r.lookupFailures, key)
		return 0
	}
	r.lookupFailures[key]++
	return r.lookupFailures[key]
}
