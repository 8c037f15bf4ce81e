package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
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

	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
	"github.com/crowsnest-dev/crowsnest/operator/internal/bus"
	"github.com/crowsnest-dev/crowsnest/operator/internal/discovery"
	"github.com/crowsnest-dev/crowsnest/operator/internal/scanjob"
)

// CacheOptions keeps the informer caches small: Pods are trimmed by
// discovery.TransformPod, only the operator's own Jobs are cached, and
// managedFields are dropped everywhere. With namespaces, every informer
// lists and watches only those (so Roles there suffice); without, the whole
// cluster (a ClusterRole). Pass Options.WatchNamespaces.
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
			&corev1.Pod{}: {Transform: discovery.TransformPod},
			&batchv1.Job{}: {
				Label:     labels.SelectorFromSet(labels.Set{scanjob.LabelManagedBy: scanjob.ManagedBy}),
				Transform: cache.TransformStripManagedFields(),
			},
		},
	}
}

// NewScheme returns a scheme with the built-in kinds and the Scanner.
func NewScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("add built-in kinds to scheme: %w", err)
	}
	if err := crowsnestv1alpha1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("add crowsnest kinds to scheme: %w", err)
	}
	return scheme, nil
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
	// Publisher sends image.needed and job.done; nil sends nothing.
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
	r := newReconciler(mgr, deps)
	if deps.Deletions != nil {
		deleted := newDeletedReports(mgr.GetClient(), deps.Lookup.Forget, deps.Deletions)
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

// newReconciler builds the reconciler on mgr's clients.
func newReconciler(mgr ctrl.Manager, deps Deps) *ScannerReconciler {
	r := &ScannerReconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("crowsnest-operator"),
		Lookup: deps.Lookup, Publisher: deps.Publisher, Options: deps.Options, Now: deps.Now,
	}
	if r.Publisher == nil {
		r.Publisher = bus.Disabled{}
	}
	if r.Now == nil {
		r.Now = time.Now
	}
	return r
}

// setupWithManager watches Scanners (spec and requested-at changes), their
// Jobs (status changes) and Pods (image, label and phase changes) and maps
// each Pod to the Scanners of its namespace.
func (r *ScannerReconciler) setupWithManager(mgr ctrl.Manager, workers int) error {
	b := ctrl.NewControllerManagedBy(mgr).
		For(&crowsnestv1alpha1.Scanner{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, requestedAtChanged))).
		Owns(&batchv1.Job{}, builder.WithPredicates(jobChanged)).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(r.scannersForPod), builder.WithPredicates(podChanged))
	if r.rescans != nil {
		b = b.WatchesRawSource(source.Channel(r.rescans, &handler.EnqueueRequestForObject{}))
	}
	return b.WithOptions(controller.Options{MaxConcurrentReconciles: max(workers, 1)}).
		Named("scanner").
		Complete(r)
}

func (r *ScannerReconciler) scannersForPod(ctx context.Context, obj client.Object) []reconcile.Request {
	var list crowsnestv1alpha1.ScannerList
	if err := r.List(ctx, &list, client.InNamespace(obj.GetNamespace())); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, s := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: s.Namespace, Name: s.Name}})
	}
	return reqs
}

// podChanged passes creations, deletions and updates that change what the
// reconciler reads (labels, phase, container statuses after the transform).
var podChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*corev1.Pod)
		n, ok2 := e.ObjectNew.(*corev1.Pod)
		if !ok1 || !ok2 {
			return true
		}
		return !equality.Semantic.DeepEqual(o.Labels, n.Labels) || !equality.Semantic.DeepEqual(o.Status, n.Status) ||
			!equality.Semantic.DeepEqual(o.DeletionTimestamp, n.DeletionTimestamp)
	},
}

// requestedAtChanged passes Scanner updates that set or change the
// crowsnest.dev/requested-at annotation; other metadata and status updates
// (the operator's own patches among them) do not reconcile.
var requestedAtChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		if e.ObjectOld == nil || e.ObjectNew == nil {
			return false
		}
		return e.ObjectOld.GetAnnotations()[AnnotationRequestedAt] != e.ObjectNew.GetAnnotations()[AnnotationRequestedAt]
	},
}

// jobChanged ignores the operator's own annotation patches.
var jobChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*batchv1.Job)
		n, ok2 := e.ObjectNew.(*batchv1.Job)
		if !ok1 || !ok2 {
			return true
		}
		return !equality.Semantic.DeepEqual(o.Status, n.Status) || !equality.Semantic.DeepEqual(o.DeletionTimestamp, n.DeletionTimestamp)
	},
}
