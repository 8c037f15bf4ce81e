package controller

import (
	"context"
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

	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
	"github.com/crowsnest-dev/crowsnest/operator/internal/discovery"
	"github.com/crowsnest-dev/crowsnest/operator/internal/scanjob"
)

// CacheOptions keeps the informer caches small: Pods are trimmed by
// discovery.TransformPod, only the operator's own Jobs are cached, and
// managedFields are dropped everywhere.
func CacheOptions() cache.Options {
	return cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}: {Transform: discovery.TransformPod},
			&batchv1.Job{}: {
				Label:     labels.SelectorFromSet(labels.Set{scanjob.LabelManagedBy: scanjob.ManagedBy}),
				Transform: cache.TransformStripManagedFields(),
			},
		},
	}
}

// SetupWithManager watches Scanners (spec changes), their Jobs (status
// changes) and Pods (image, label and phase changes) and maps each Pod to
// the Scanners of its namespace.
func (r *ScannerReconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	if r.Now == nil {
		r.Now = time.Now
	}
	b := ctrl.NewControllerManagedBy(mgr).
		For(&crowsnestv1alpha1.Scanner{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&batchv1.Job{}, builder.WithPredicates(jobChanged)).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(r.scannersForPod), builder.WithPredicates(podChanged))
	if r.Rescans != nil {
		b = b.WatchesRawSource(source.Channel(r.Rescans, &handler.EnqueueRequestForObject{}))
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
