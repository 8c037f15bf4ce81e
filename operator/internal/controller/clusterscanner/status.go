package clusterscanner

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
)

// maxNamedOwners bounds the ClusterScanners a Conflicting message names.
const maxNamedOwners = 5

// clusterOutcome is what the ClusterScanner status setters need from one
// reconcile.
type clusterOutcome struct {
	plan        *clusterPlan // nil when the reconcile did not get as far
	invalid     error        // the spec cannot be evaluated (terminal)
	err         error        // the reconcile failed (retried)
	progressing bool         // writes were left for the next reconcile
}

// setClusterScannerStatus writes counts and conditions. Pure apart from
// condition transition times: the same ClusterScanner and outcome give the
// same status. Without a plan the counts stay those of the last reconcile
// that got one.
func setClusterScannerStatus(cs *crowsnestv1alpha1.ClusterScanner, o clusterOutcome) {
	st := &cs.Status
	st.ObservedGeneration = cs.Generation
	if o.plan != nil {
		setClusterCounts(st, o.plan)
		setConflicting(cs, o.plan)
	}
	cond := func(typ string, status metav1.ConditionStatus, reason, msg string) {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: cs.Generation})
	}
	switch {
	case o.invalid != nil:
		msg := clip(o.invalid.Error(), crowsnestv1alpha1.MaxConditionMessage)
		cond(crowsnestv1alpha1.ConditionReady, metav1.ConditionFalse, crowsnestv1alpha1.ReasonInvalidSelector, msg)
		cond(crowsnestv1alpha1.ConditionStalled, metav1.ConditionTrue, crowsnestv1alpha1.ReasonInvalidSelector, msg)
		meta.RemoveStatusCondition(&st.Conditions, crowsnestv1alpha1.ConditionReconciling)
		return
	case o.err != nil:
		msg := clip(o.err.Error(), crowsnestv1alpha1.MaxConditionMessage)
		cond(crowsnestv1alpha1.ConditionReady, metav1.ConditionFalse, crowsnestv1alpha1.ReasonReconcileFailed, msg)
		cond(crowsnestv1alpha1.ConditionReconciling, metav1.ConditionTrue, crowsnestv1alpha1.ReasonReconcileFailed, msg)
	default:
		cond(crowsnestv1alpha1.ConditionReady, metav1.ConditionTrue, crowsnestv1alpha1.ReasonReconciled,
			fmt.Sprintf("%d namespaces covered, %d of them by a Scanner of their own", st.Namespaces, st.Overridden))
		if o.progressing {
			cond(crowsnestv1alpha1.ConditionReconciling, metav1.ConditionTrue, crowsnestv1alpha1.ReasonProgressing,
				fmt.Sprintf("%d Scanners or ServiceAccounts still to write", o.plan.writes()-maxClusterWrites))
		} else {
			meta.RemoveStatusCondition(&st.Conditions, crowsnestv1alpha1.ConditionReconciling)
		}
	}
	meta.RemoveStatusCondition(&st.Conditions, crowsnestv1alpha1.ConditionStalled)
}

// setClusterCounts sums the generated Scanners' counts and keeps the
// namespaces with the most failed, then queued, images.
func setClusterCounts(st *crowsnestv1alpha1.ClusterScannerStatus, p *clusterPlan) {
	st.Namespaces, st.Overridden, st.Conflicting = int32(p.covered), int32(p.overridden), int32(p.conflicting)
	st.Images, st.Scanned, st.Queued, st.Scanning, st.Failed = 0, 0, 0, 0, 0
	var worst []crowsnestv1alpha1.NamespaceScans
	for _, s := range p.generated {
		c := &s.Status
		st.Images += c.Images
		st.Scanned += c.Scanned
		st.Queued += c.Queued
		st.Scanning += c.Scanning
		st.Failed += c.Failed
		if c.Failed > 0 || c.Queued > 0 {
			worst = append(worst, crowsnestv1alpha1.NamespaceScans{Namespace: s.Namespace, Failed: c.Failed, Queued: c.Queued})
		}
	}
	slices.SortFunc(worst, func(a, b crowsnestv1alpha1.NamespaceScans) int {
		return cmp.Or(cmp.Compare(b.Failed, a.Failed), cmp.Compare(b.Queued, a.Queued), strings.Compare(a.Namespace, b.Namespace))
	})
	st.WorstNamespaces = worst[:min(len(worst), crowsnestv1alpha1.MaxWorstNamespaces)]
	if len(st.WorstNamespaces) == 0 {
		st.WorstNamespaces = nil
	}
}

func setConflicting(cs *crowsnestv1alpha1.ClusterScanner, p *clusterPlan) {
	c := metav1.Condition{Type: crowsnestv1alpha1.ConditionConflicting, Status: metav1.ConditionFalse,
		Reason: crowsnestv1alpha1.ReasonNoConflict, ObservedGeneration: cs.Generation}
	if p.conflicting > 0 {
		names := p.olderOwners
		more := ""
		if len(names) > maxNamedOwners {
			names, more = names[:maxNamedOwners], fmt.Sprintf(" and %d more", len(p.olderOwners)-maxNamedOwners)
		}
		c.Status, c.Reason = metav1.ConditionTrue, crowsnestv1alpha1.ReasonCoveredByOlder
		c.Message = fmt.Sprintf("%d selected namespaces are left to an older ClusterScanner (it generates their Scanners): %s%s",
			p.conflicting, strings.Join(names, ", "), more)
	}
	meta.SetStatusCondition(&cs.Status.Conditions, c)
}

// clip bounds a message quoted in a condition.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
