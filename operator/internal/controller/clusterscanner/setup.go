package clusterscanner

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
	"github.com/crowsnest-dev/crowsnest/operator/internal/enqueue"
	"github.com/crowsnest-dev/crowsnest/operator/internal/predicates"
	"github.com/crowsnest-dev/crowsnest/operator/internal/scanjob"
)

// Setup adds the ClusterScanner controller to mgr. It needs
// every namespace in view: call it only when the operator watches the
// whole cluster, with a cache from CacheOptions. cmd/main.go and the
// tests both call it.
func Setup(mgr ctrl.Manager, opts Options) error {
	r := &Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("crowsnest-operator"), Options: opts}
	b := ctrl.NewControllerManagedBy(mgr).
		For(&crowsnestv1alpha1.ClusterScanner{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicates.RequestedAtChanged))).
		// Which ClusterScanner wins a namespace depends on all of them.
		Watches(&crowsnestv1alpha1.ClusterScanner{}, handler.EnqueueRequestsFromMapFunc(r.allClusterScanners),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.allClusterScanners), builder.WithPredicates(namespaceChanged)).
		Watches(&crowsnestv1alpha1.Scanner{}, handler.EnqueueRequestsFromMapFunc(r.clusterScannersForScanner), builder.WithPredicates(scannerChangedForCluster)).
		// A generated Scanner's counts change with every scan in its
		// namespace; the ClusterScanner sums them once per enqueue.StatusDelay.
		Watches(&crowsnestv1alpha1.Scanner{}, enqueue.After(func() time.Duration { return enqueue.StatusDelay }, r.clusterScannersForScanner), builder.WithPredicates(generatedCountsChanged))
	if opts.ServiceAccount != "" {
		b = b.Watches(&corev1.ServiceAccount{}, handler.EnqueueRequestsFromMapFunc(r.allClusterScanners),
			builder.WithPredicates(scanServiceAccountDeleted(opts.ServiceAccount)))
	}
	if opts.NetworkPolicy != nil {
		b = b.Watches(&networkingv1.NetworkPolicy{}, handler.EnqueueRequestsFromMapFunc(r.allClusterScanners),
			builder.WithPredicates(scanNetworkPolicyChanged(opts.NetworkPolicyName)))
	}
	// One worker: ClusterScanners are few, and one at a time never races
	// another over a namespace's ServiceAccount.
	if err := b.WithOptions(controller.Options{MaxConcurrentReconciles: 1}).Named("clusterscanner").Complete(r); err != nil {
		return fmt.Errorf("set up clusterscanner controller: %w", err)
	}
	return nil
}

// CacheOptions restricts the ServiceAccount and NetworkPolicy
// informers the ClusterScanner controller starts to the ones the operator
// created, so that the operator does not hold every ServiceAccount and
// NetworkPolicy of the cluster.
// Apply it to the manager's cache options (CacheOptions).
func CacheOptions(o cache.Options) cache.Options {
	byObject := make(map[client.Object]cache.ByObject, len(o.ByObject)+2)
	for k, v := range o.ByObject {
		byObject[k] = v
	}
	ours := cache.ByObject{Label: labels.SelectorFromSet(labels.Set{scanjob.LabelManagedBy: scanjob.ManagedBy})}
	byObject[&corev1.ServiceAccount{}] = ours
	byObject[&networkingv1.NetworkPolicy{}] = ours
	o.ByObject = byObject
	return o
}

func (r *Reconciler) allClusterScanners(ctx context.Context, _ client.Object) []reconcile.Request {
	var list crowsnestv1alpha1.ClusterScannerList
	if err := r.List(ctx, &list); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list clusterscanners")
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, cs := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: cs.Name}})
	}
	return reqs
}

// clusterScannersForScanner maps a generated Scanner to its ClusterScanner
// (its counts feed the status) and a namespace's own Scanner to every
// ClusterScanner (it overrides them there).
func (r *Reconciler) clusterScannersForScanner(ctx context.Context, obj client.Object) []reconcile.Request {
	if ref := generatedBy(obj); ref != nil {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: ref.Name}}}
	}
	return r.allClusterScanners(ctx, obj)
}

// generatedBy returns the controller reference of a Scanner a
// ClusterScanner generated, or nil.
func generatedBy(obj client.Object) *metav1.OwnerReference {
	ref := metav1.GetControllerOfNoCopy(obj)
	if ref == nil || ref.Kind != "ClusterScanner" || ref.APIVersion != crowsnestv1alpha1.GroupVersion.String() {
		return nil
	}
	return ref
}

// namespaceChanged passes creations, deletions, label changes and the start
// of a namespace's deletion.
var namespaceChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		if e.ObjectOld == nil || e.ObjectNew == nil {
			return false
		}
		return !equality.Semantic.DeepEqual(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels()) ||
			!equality.Semantic.DeepEqual(e.ObjectOld.GetDeletionTimestamp(), e.ObjectNew.GetDeletionTimestamp())
	},
}

// scannerChangedForCluster passes creations, deletions and changes of what
// decides ownership or the generated spec. Status updates pass nothing
// (generatedCountsChanged passes a generated Scanner's new counts).
var scannerChangedForCluster = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*crowsnestv1alpha1.Scanner)
		n, ok2 := e.ObjectNew.(*crowsnestv1alpha1.Scanner)
		if !ok1 || !ok2 {
			return false
		}
		return o.Generation != n.Generation || !equality.Semantic.DeepEqual(o.Labels, n.Labels) ||
			!equality.Semantic.DeepEqual(o.OwnerReferences, n.OwnerReferences) ||
			!equality.Semantic.DeepEqual(o.DeletionTimestamp, n.DeletionTimestamp)
	},
}

// generatedCountsChanged passes only the status updates of generated
// Scanners that change the counts their ClusterScanner sums.
var generatedCountsChanged = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*crowsnestv1alpha1.Scanner)
		n, ok2 := e.ObjectNew.(*crowsnestv1alpha1.Scanner)
		return ok1 && ok2 && generatedBy(n) != nil && !sameCounts(&o.Status, &n.Status)
	},
}

func sameCounts(a, b *crowsnestv1alpha1.ScannerStatus) bool {
	return a.Images == b.Images && a.Scanned == b.Scanned && a.Queued == b.Queued && a.Scanning == b.Scanning && a.Failed == b.Failed
}

// scanServiceAccountDeleted passes deletions of the scan ServiceAccount (the
// operator's, as the cache holds only those), so that it is made again.
func scanServiceAccountDeleted(name string) predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		UpdateFunc:  func(event.UpdateEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		DeleteFunc:  func(e event.DeleteEvent) bool { return e.Object != nil && e.Object.GetName() == name },
	}
}
