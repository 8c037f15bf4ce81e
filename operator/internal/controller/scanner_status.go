package controller

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
)

// ReasonReconcileFailed is the Ready and Stalled reason when a reconcile
// failed (the API server refused a scan Job, say); the message holds the
// error.
const ReasonReconcileFailed = "ReconcileFailed"

// ReasonNamespaceNotPermitted is the Ready and Stalled reason when the
// operator may not scan the Scanner's namespace: it is not in
// --watch-namespaces, or the API server forbids what a scan needs there.
const ReasonNamespaceNotPermitted = "NamespaceNotPermitted"

// maxErrorMessage bounds an error quoted in a condition message.
const maxErrorMessage = 1024

// outcome is what the status setters need from one reconcile.
type outcome struct {
	plan         plan
	lookupErr    error // results-api lookup failed
	eventsErr    error // an event could not be published
	reconcileErr error // the reconcile failed; plan is not known
	// notPermitted says why the operator may not scan the Scanner's
	// namespace; when set nothing was done and plan is not known.
	notPermitted string
}

// finished tells whether the reconcile got as far as a plan.
func (o outcome) finished() bool { return o.reconcileErr == nil && o.notPermitted == "" }

// setStatus writes counts, recent failures and conditions. It is pure: the
// same Scanner and outcome give the same status. After a failed reconcile
// the counts and failures stay those of the last one that finished.
func setStatus(s *crowsnestv1alpha1.Scanner, o outcome) {
	st := &s.Status
	st.ObservedGeneration = s.Generation
	if o.finished() {
		setCounts(st, o)
	}
	setReady(s, o)
	setReconciling(s, o)
	setStalled(s, o)
}

func setCounts(st *crowsnestv1alpha1.ScannerStatus, o outcome) {
	st.Images = int32(o.plan.images)
	st.Scanning = int32(o.plan.scanning)
	st.Failed = int32(o.plan.failed)
	if o.lookupErr == nil {
		st.Scanned = int32(o.plan.scanned)
		st.Queued = int32(o.plan.queued)
		if !o.plan.lastScan.IsZero() {
			st.LastScanTime = &metav1.Time{Time: o.plan.lastScan.UTC()}
		}
	}
	st.RecentFailures = o.plan.failures
}

func setReady(s *crowsnestv1alpha1.Scanner, o outcome) {
	st := &s.Status
	c := metav1.Condition{Type: crowsnestv1alpha1.ConditionReady, ObservedGeneration: s.Generation}
	switch {
	case o.notPermitted != "":
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, ReasonNamespaceNotPermitted, notPermittedMessage(s.Namespace, o.notPermitted)
	case o.reconcileErr != nil:
		c.Status, c.Reason = metav1.ConditionFalse, ReasonReconcileFailed
		c.Message = "reconcile failed (retrying with backoff): " + clip(o.reconcileErr.Error(), maxErrorMessage)
	case o.lookupErr != nil:
		c.Status, c.Reason = metav1.ConditionFalse, crowsnestv1alpha1.ReasonResultsAPIUnavailable
		c.Message = fmt.Sprintf("results-api lookup failed, so no scan Jobs are created until it answers (retrying with backoff): %v", o.lookupErr)
	case o.eventsErr != nil:
		c.Status, c.Reason = metav1.ConditionFalse, crowsnestv1alpha1.ReasonEventsUndelivered
		c.Message = fmt.Sprintf("scanning continues, but events are not being delivered to NATS (retrying): %v", o.eventsErr)
	case st.Queued+st.Scanning > 0:
		c.Status, c.Reason = metav1.ConditionFalse, crowsnestv1alpha1.ReasonScanning
		c.Message = fmt.Sprintf("%d of %d images scanned; %d scanning, %d queued", st.Scanned, st.Images, st.Scanning, st.Queued)
	case st.Failed > 0:
		c.Status, c.Reason = metav1.ConditionFalse, crowsnestv1alpha1.ReasonScanFailed
		c.Message = fmt.Sprintf("%d of %d images could not be scanned; see status.recentFailures for reasons and retry times", st.Failed, st.Images)
	default:
		c.Status, c.Reason = metav1.ConditionTrue, crowsnestv1alpha1.ReasonUpToDate
		c.Message = fmt.Sprintf("all %d running images have a current report", st.Images)
	}
	meta.SetStatusCondition(&st.Conditions, c)
}

func setReconciling(s *crowsnestv1alpha1.Scanner, o outcome) {
	st := &s.Status
	if o.finished() && o.lookupErr == nil && st.Queued+st.Scanning > 0 {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: crowsnestv1alpha1.ConditionReconciling, Status: metav1.ConditionTrue, ObservedGeneration: s.Generation,
			Reason: crowsnestv1alpha1.ReasonScanning, Message: fmt.Sprintf("%d scanning, %d queued", st.Scanning, st.Queued),
		})
		return
	}
	meta.RemoveStatusCondition(&st.Conditions, crowsnestv1alpha1.ConditionReconciling)
}

func setStalled(s *crowsnestv1alpha1.Scanner, o outcome) {
	st := &s.Status
	switch {
	case o.notPermitted != "":
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: crowsnestv1alpha1.ConditionStalled, Status: metav1.ConditionTrue, ObservedGeneration: s.Generation,
			Reason: ReasonNamespaceNotPermitted, Message: notPermittedMessage(s.Namespace, o.notPermitted),
		})
	case o.reconcileErr != nil:
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: crowsnestv1alpha1.ConditionStalled, Status: metav1.ConditionTrue, ObservedGeneration: s.Generation,
			Reason: ReasonReconcileFailed, Message: clip(o.reconcileErr.Error(), maxErrorMessage),
		})
	case o.lookupErr != nil:
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: crowsnestv1alpha1.ConditionStalled, Status: metav1.ConditionTrue, ObservedGeneration: s.Generation,
			Reason: crowsnestv1alpha1.ReasonResultsAPIUnavailable, Message: "cannot tell which images are scanned: results-api is unreachable; check the operator's --results-api-url and the results-api Pods",
		})
	default:
		meta.RemoveStatusCondition(&st.Conditions, crowsnestv1alpha1.ConditionStalled)
	}
}

// notPermittedMessage says why namespace ns is not scanned and how to
// enable it: the chart's global.scan.namespaces feeds both the operator's
// --watch-namespaces and the Roles that let it act there.
func notPermittedMessage(ns, why string) string {
	return fmt.Sprintf("the operator may not scan namespace %s: %s. To scan it, add %q to the Helm chart's global.scan.namespaces "+
		"(it sets the operator's --watch-namespaces and grants its Role in each namespace). "+
		"Not retried until the operator restarts, this Scanner's spec changes or its %s annotation is set",
		ns, clip(why, maxErrorMessage), ns, AnnotationRequestedAt)
}
