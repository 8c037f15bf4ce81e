package scanner

import (
	"context"
	"errors"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
	"github.com/crowsnest-dev/crowsnest/operator/internal/bus"
	"github.com/crowsnest-dev/crowsnest/operator/internal/discovery"
	"github.com/crowsnest-dev/crowsnest/operator/internal/enqueue"
	"github.com/crowsnest-dev/crowsnest/operator/internal/inventory"
	"github.com/crowsnest-dev/crowsnest/operator/internal/podcache"
	"github.com/crowsnest-dev/crowsnest/operator/internal/predicates"
	"github.com/crowsnest-dev/crowsnest/operator/internal/scanbudget"
	"github.com/crowsnest-dev/crowsnest/operator/internal/scanjob"
)

// CacheOptions keeps the informer caches small: Pods are trimmed by
// discovery.TransformPod, only the operator's own Jobs are cached, trimmed
// by TransformJob, and managedFields are dropped everywhere. With
// namespaces, every informer lists and watches only those (so Roles there
// suffice); without, the whole cluster (a ClusterRole). Pass
// Options.WatchNamespaces.
func CacheOptions(namespaces ...string) cache.Options {
	var byNamespace map[string]cache.Config
	if len(namespaces) > 0 {
		byNamespace = make(map[string]cache.Config, len(namespaces))
		for _, ns := range namespaces {
			byNamespace[ns] = cache.Config{}
		}
	}
	return cache.Options{
		DefaultNamespaces: byNamespace,
		DefaultTransform:  cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			// Only the scan Pods: workload Pods are in the compact podcache.
			&corev1.Pod{}: {
				Label:     labels.SelectorFromSet(labels.Set{discovery.ManagedByLabel: discovery.ManagedByValue}),
				Transform: discovery.TransformPod,
			},
			&batchv1.Job{}: {
				Label:     labels.SelectorFromSet(labels.Set{scanjob.LabelManagedBy: scanjob.ManagedBy}),
				Transform: TransformJob,
			},
		},
	}
}

// ReportDeletions delivers the digest of every report deleted in
// results-api (bus.JetStream), from when OnReportDeleted is called until
// the function it returns is.
type ReportDeletions interface {
	OnReportDeleted(fn func(digest string)) (unsubscribe func() error, err error)
}

// Deps is everything the Scanner controller is built from besides the
// manager.
type Deps struct {
	// Lookup asks results-api which digests have a report (required).
	Lookup Lookup
	// Publisher sends image.needed, job.done and (with
	// Options.Inventory.Enabled) inventory.snapshot; nil sends nothing.
	Publisher bus.Publisher
	// Deletions, when set, turns each deleted report into a reconcile of
	// every Scanner, so a digest that still runs is scanned again at once.
	Deletions ReportDeletions
	Options   Options
	// Now is the reconciler's clock; nil is time.Now.
	Now func() time.Time
}

// Setup adds the Scanner controller to mgr, with the watch on deleted
// reports when deps.Deletions is set. cmd/main.go and the controller tests
// both call it, so the tests run the wiring that ships.
func Setup(mgr ctrl.Manager, deps Deps) error {
	if deps.Lookup == nil {
		return errors.New("set up scanner controller: no results-api lookup")
	}
	pods, err := podcache.New(mgr.GetConfig(), deps.Options.WatchNamespaces)
	if err != nil {
		return fmt.Errorf("set up scanner controller: %w", err)
	}
	if err := mgr.Add(pods); err != nil {
		return fmt.Errorf("add pod cache: %w", err)
	}
	if err := indexJobs(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return fmt.Errorf("set up scanner controller: %w", err)
	}
	r := newReconciler(mgr, deps)
	r.pods = pods
	if r.jobIndex, err = newJobReader(context.Background(), mgr.GetCache()); err != nil {
		return fmt.Errorf("set up scanner controller: %w", err)
	}
	if r.namespaces.idx, err = scannerIndexer(context.Background(), mgr.GetCache()); err != nil {
		return fmt.Errorf("set up scanner controller: %w", err)
	}
	if err := setupInventory(mgr, pods, r.Publisher, deps.Options); err != nil {
		return err
	}
	if deps.Deletions != nil {
		deleted := newDeletedReports(mgr.GetClient(), pods, deps.Lookup.Forget, deps.Deletions)
		if err := mgr.Add(deleted); err != nil {
			return fmt.Errorf("add deleted-reports runnable: %w", err)
		}
		r.rescans = deleted.Events()
	}
	if err := r.setupWithManager(mgr, deps.Options.Workers); err != nil {
		return fmt.Errorf("set up scanner controller: %w", err)
	}
	return nil
}

// setupInventory adds the owner caches and the inventory publisher when the
// inventory is on and events go somewhere.
func setupInventory(mgr ctrl.Manager, pods *podcache.Cache, p bus.Publisher, o Options) error {
	if !o.Inventory.Enabled || !p.Enabled() {
		return nil
	}
	opts := o.Inventory
	opts.Namespaces = o.WatchNamespaces
	owners, err := inventory.NewOwners(mgr.GetConfig(), o.WatchNamespaces, opts.NamespaceLabels)
	if err != nil {
		return fmt.Errorf("set up inventory: %w", err)
	}
	if err := mgr.Add(owners); err != nil {
		return fmt.Errorf("add inventory owner caches: %w", err)
	}
	if err := mgr.Add(inventory.NewPublisher(pods, owners, p, opts)); err != nil {
		return fmt.Errorf("add inventory publisher: %w", err)
	}
	return nil
}

// newReconciler builds the reconciler on mgr's clients.
func newReconciler(mgr ctrl.Manager, deps Deps) *Reconciler {
	r := &Reconciler{
		Client: noJobUpdates{mgr.GetClient()}, APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("crowsnest-operator"),
		Lookup: deps.Lookup, Publisher: deps.Publisher, Options: deps.Options, Now: deps.Now,
	}
	if r.Publisher == nil {
		r.Publisher = bus.Disabled{}
	}
	if r.Now == nil {
		r.Now = time.Now
	}
	r.platforms = platforms{reader: mgr.GetAPIReader(), now: r.Now}
	r.namespaces = newNamespaceScanners(r.Client)
	r.stuckChecks = newStuckChecks(mgr.GetClient())
	r.wakeups = make(chan event.GenericEvent, 1024)
	r.budget = scanbudget.New(r.Now, deps.Options.MaxConcurrentScans, deps.Options.RescansPerMinute, r.wake)
	return r
}

// wake enqueues a Scanner the budget gave a free slot to. It never blocks:
// a wake-up that does not fit is given again by the next reconcile that
// consults the budget.
func (r *Reconciler) wake(key types.NamespacedName) {
	s := &crowsnestv1alpha1.Scanner{}
	s.Namespace, s.Name = key.Namespace, key.Name
	scannerWakeups.WithLabelValues(wakeupBudget).Inc()
	select {
	case r.wakeups <- event.GenericEvent{Object: s}:
	default:
	}
}

// setupWithManager watches Scanners (spec and requested-at changes), their
// Jobs (status changes) and workload Pods (image, label, phase and node
// changes, from the pod cache), each Pod mapped to the Scanners of its
// namespace. The scan Pods' own progress shows in their Jobs' status.
func (r *Reconciler) setupWithManager(mgr ctrl.Manager, workers int) error {
	b := ctrl.NewControllerManagedBy(mgr).
		For(&crowsnestv1alpha1.Scanner{}, builder.WithPredicates(counted(wakeupSpec, predicate.Or(predicate.GenerationChangedPredicate{}, predicates.RequestedAtChanged)))).
		Owns(&batchv1.Job{}, builder.WithPredicates(counted(wakeupOwnJob, r.ownJobChanged()))).
		WatchesRawSource(podSource{pods: r.pods, scanners: r.namespaces}).
		// Other Scanners that see the digest: a Job's start, end and
		// deletion change only their counts (coalesced per Scanner over
		// peerDelay, the last end it waits for after enqueue.StatusDelay:
		// peers.go); a recorded failure may be theirs to retry at once.
		Watches(&batchv1.Job{}, peerHandler(r.scannersOfDigest, &r.waiting, r.peerDelay, enqueue.StatusDelay), builder.WithPredicates(predicate.Or[client.Object](phaseChanged, outcomeRecorded))).
		Watches(&batchv1.Job{}, handler.EnqueueRequestsFromMapFunc(countedMap(wakeupPeerFailed, r.scannersOfDigest)), builder.WithPredicates(failureRecorded))
	if r.rescans != nil {
		b = b.WatchesRawSource(source.Channel(r.rescans, &handler.EnqueueRequestForObject{}))
	}
	b = b.WatchesRawSource(source.Channel(r.wakeups, &handler.EnqueueRequestForObject{})).
		WatchesRawSource(r.stuckChecks)
	return b.WithOptions(controller.Options{MaxConcurrentReconciles: max(workers, 1)}).
		Named("scanner").
		Complete(r)
}

// scannersOfDigest maps a scan Job to the Scanners of every namespace that
// runs its digest: one Job speaks for the digest in the whole cluster, so
// when it starts, ends or goes, every Scanner that sees the digest decides
// again (counts it as scanning, takes over a retry, or scans it once it is
// gone). Its own Scanner hears of it through the owner reference.
func (r *Reconciler) scannersOfDigest(ctx context.Context, obj client.Object) []reconcile.Request {
	digest := obj.GetAnnotations()[scanjob.AnnotationDigest]
	if digest == "" {
		return nil
	}
	seen := map[string]bool{}
	var reqs []reconcile.Request
	for _, p := range r.pods.Running(digest) {
		ns := p.Namespace()
		if seen[ns] {
			continue
		}
		seen[ns] = true
		for _, req := range r.namespaces.requests(ctx, ns, watchJobs) {
			if req.Namespace == obj.GetNamespace() && req.Name == obj.GetLabels()[scanjob.LabelScanner] {
				continue // its own Scanner (ownJobChanged)
			}
			reqs = append(reqs, req)
		}
	}
	return reqs
}

// outcomeRecorded passes the patch that records a scan Job's outcome: the
// other Scanners that see its digest decide on it.
var outcomeRecorded = predicate.Funcs{
	CreateFunc: func(event.CreateEvent) bool { return false },
	DeleteFunc: func(event.DeleteEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetAnnotations()[scanjob.AnnotationOutcome] != e.ObjectNew.GetAnnotations()[scanjob.AnnotationOutcome]
	},
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// failureRecorded passes the patch that records a scan Job's failure: when
// the image could not be pulled from the Job's namespace, another namespace
// that runs the digest tries at once (need.go, elsewhere).
var failureRecorded = predicate.Funcs{
	CreateFunc: func(event.CreateEvent) bool { return false },
	DeleteFunc: func(event.DeleteEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetAnnotations()[scanjob.AnnotationOutcome] != string(eventsv1.OutcomeFailed) &&
			e.ObjectNew.GetAnnotations()[scanjob.AnnotationOutcome] == string(eventsv1.OutcomeFailed)
	},
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// phaseChanged passes the change of a scan Job that anyone acts on: its
// phase (running, succeeded, failed; jobOutcome), its conditions, its
// deletion, or another Job under its name. The rest of a Job's status
// (active, ready, the Pods' counts) moves several times per scan in a real
// cluster and changes no decision; the operator's own annotation and
// finalizer patches do not pass either.
var phaseChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*batchv1.Job)
		n, ok2 := e.ObjectNew.(*batchv1.Job)
		if !ok1 || !ok2 {
			return true
		}
		// A new UID is another Job under the same name (a retry): the
		// informer can show the step from the old one as an update.
		return o.UID != n.UID || jobOutcome(o, nil).phase != jobOutcome(n, nil).phase ||
			!equality.Semantic.DeepEqual(o.Status.Conditions, n.Status.Conditions) ||
			!equality.Semantic.DeepEqual(o.DeletionTimestamp, n.DeletionTimestamp)
	},
}

// runningJob tells whether obj is a scan Job that runs (jobActive).
func runningJob(obj client.Object) bool {
	job, ok := obj.(*batchv1.Job)
	return ok && jobOutcome(job, nil).phase == jobActive
}

// ownJobChanged passes what a Scanner needs to hear of its own Jobs: a
// phase change or deletion (phaseChanged), and a Job's going unless the
// Scanner deleted it itself with nothing waiting for it to go (retired).
// Not a Job's creation: the Scanner created it, its claim in the budget
// covers the moment the cache does not show it yet, and its stuck check is
// timed then (stuckChecks); on a start every Scanner is reconciled anyway.
// Each of those was a reconcile per Job that decided nothing. A Job the
// cache first shows already ended passes, though: the watch can deliver
// its creation late (a loaded API server, a relist), with its end in it.
func (r *Reconciler) ownJobChanged() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool { return !runningJob(e.Object) },
		UpdateFunc: phaseChanged.UpdateFunc,
		DeleteFunc: func(e event.DeleteEvent) bool {
			_, expected := r.retired.LoadAndDelete(e.Object.GetUID())
			return !expected
		},
	}
}
