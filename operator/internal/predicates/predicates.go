// Package predicates holds the watch predicates both controllers apply to
// their own kind (Scanner, ClusterScanner), after Flux's
// internal/predicates.
package predicates

import (
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
)

// RequestedAtChanged passes updates that set or change the
// crowsnest.dev/requested-at annotation (v1alpha1.AnnotationRequestedAt);
// other metadata and status updates (the operator's own patches among
// them) do not reconcile. Combine it with GenerationChangedPredicate.
var RequestedAtChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		if e.ObjectOld == nil || e.ObjectNew == nil {
			return false
		}
		return e.ObjectOld.GetAnnotations()[crowsnestv1alpha1.AnnotationRequestedAt] != e.ObjectNew.GetAnnotations()[crowsnestv1alpha1.AnnotationRequestedAt]
	},
}
