package scanner

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
)

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
// the counts, failures, ScansComplete and Degraded stay those of the last
// one that finished.
//
// Ready says whether the Scanner is reconciled healthily (its namespace may
// be scanned, results-api and NATS answer); it does not flip during routine
// scans or because some image cannot be scanned, so health checks built on
// kstatus (Flux, Argo CD) settle. Scan progress is ScansComplete, failed
// images Degraded. Reconciling is True while a temporary failure is retried,
// Stalled only while a human must act.
func setStatus(s *crowsnestv1alpha1.Scanner, o outcome) {
	st := &s.Status
	st.ObservedGeneration = s.Generation
	if o.finished() {
		setCounts(st, o)
		setScansComplete(s, o)
		setDegraded(s, o)
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
	c := metav1.Condition{Type: crowsnestv1alpha1.ConditionReady, ObservedGeneration: s.Generation, Status: metav1.ConditionFalse}
	switch {
	case o.notPermitted != "":
		c.Reason, c.Message = crowsnestv1alpha1.ReasonNamespaceNotPermitted, notPermittedMessage(s.Namespace, o.notPermitted)
	case o.reconcileErr != nil:
		c.Reason = crowsnestv1alpha1.ReasonReconcileFailed
		c.Message = "reconcile failed (retrying with backoff): " + clip(o.reconcileErr.Error(), crowsnestv1alpha1.MaxConditionMessage)
	case o.lookupErr != nil:
		c.Reason = crowsnestv1alpha1.ReasonResultsAPIUnavailable
		c.Message = "results-api lookup failed, so no scan Jobs are created until it answers (retrying with backoff): " + clip(o.lookupErr.Error(), crowsnestv1alpha1.MaxConditionMessage)
	case o.eventsErr != nil:
		c.Reason = crowsnestv1alpha1.ReasonEventsUndelivered
		c.Message = "scanning continues, but events are not being delivered to NATS (retrying): " + clip(o.eventsErr.Error(), crowsnestv1alpha1.MaxConditionMessage)
	default:
		c.Status, c.Reason = metav1.ConditionTrue, crowsnestv1alpha1.ReasonReconciled
		c.Message = "reconciled: the namespace may be scanned and results-api answers; scan progress is in ScansComplete, failed images in Degraded"
	}
	meta.SetStatusCondition(&s.Status.Conditions, c)
}

// setScansComplete says whether any image waits for or is in a scan; after
// a failed lookup that is not known.
func setScansComplete(s *crowsnestv1alpha1.Scanner, o outcome) {
	st := &s.Status
	c := metav1.Condition{Type: crowsnestv1alpha1.ConditionScansComplete, ObservedGeneration: s.Generation, Status: metav1.ConditionFalse}
	progress := fmt.Sprintf("%d of %d images have a current report", st.Scanned, st.Images)
	switch {
	case o.lookupErr != nil:
		c.Status, c.Reason = metav1.ConditionUnknown, crowsnestv1alpha1.ReasonResultsAPIUnavailable
		c.Message = "which images have a current report is unknown until results-api answers"
	case st.Scanning > 0:
		c.Reason = crowsnestv1alpha1.ReasonScanning
		c.Message = fmt.Sprintf("%d scanning, %d queued; %s", st.Scanning, st.Queued, progress)
	case st.Queued > 0:
		c.Reason = crowsnestv1alpha1.ReasonQueued
		c.Message = fmt.Sprintf("%d queued, none scanning (each waits for a free slot or for its finished Job to go); %s", st.Queued, progress)
	case st.Failed > 0:
		c.Status, c.Reason = metav1.ConditionTrue, crowsnestv1alpha1.ReasonUpToDate
		c.Message = fmt.Sprintf("no image waits for a scan; %s, %d could not be scanned (see Degraded)", progress, st.Failed)
	default:
		c.Status, c.Reason = metav1.ConditionTrue, crowsnestv1alpha1.ReasonUpToDate
		c.Message = fmt.Sprintf("all %d running images have a current report", st.Images)
	}
	meta.SetStatusCondition(&st.Conditions, c)
}

// setDegraded says whether some images could not be scanned.
func setDegraded(s *crowsnestv1alpha1.Scanner, o outcome) {
	st := &s.Status
	c := metav1.Condition{Type: crowsnestv1alpha1.ConditionDegraded, ObservedGeneration: s.Generation, Status: metav1.ConditionTrue}
	failed, notPullable := o.plan.failed, o.plan.notPullable
	switch failed {
	case 0:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, crowsnestv1alpha1.ReasonNoFailures, "no image failed to scan"
	case notPullable:
		c.Reason = crowsnestv1alpha1.ReasonNotPullable
		c.Message = fmt.Sprintf("%d of %d images cannot be pulled (loaded into the node by digest only), so they are not scanned; see status.recentFailures", failed, st.Images)
	default:
		c.Reason = crowsnestv1alpha1.ReasonScanFailed
		c.Message = fmt.Sprintf("%d of %d images could not be scanned: %d failed (retried with backoff), %d cannot be pulled; see status.recentFailures for reasons and retry times",
			failed, st.Images, failed-notPullable, notPullable)
	}
	meta.SetStatusCondition(&st.Conditions, c)
}

// setReconciling is True while Ready is False for a cause that is retried
// and passes without a human: results-api or NATS unreachable, a reconcile
// error such as a timeout or a conflict.
func setReconciling(s *crowsnestv1alpha1.Scanner, o outcome) {
	c := metav1.Condition{Type: crowsnestv1alpha1.ConditionReconciling, Status: metav1.ConditionTrue, ObservedGeneration: s.Generation}
	switch {
	case o.notPermitted != "":
	case o.reconcileErr != nil:
		if !needsHuman(o.reconcileErr) { // else Stalled
			c.Reason, c.Message = crowsnestv1alpha1.ReasonReconcileFailed, "retrying a failed reconcile with backoff"
		}
	case o.lookupErr != nil:
		c.Reason, c.Message = crowsnestv1alpha1.ReasonResultsAPIUnavailable, "retrying the results-api lookup with backoff"
	case o.eventsErr != nil:
		c.Reason, c.Message = crowsnestv1alpha1.ReasonEventsUndelivered, "retrying undelivered events"
	}
	if c.Reason == "" {
		meta.RemoveStatusCondition(&s.Status.Conditions, crowsnestv1alpha1.ConditionReconciling)
		return
	}
	meta.SetStatusCondition(&s.Status.Conditions, c)
}

// setStalled is True only when nothing changes until a human acts: the
// namespace is not permitted, or the API server refuses what the operator
// asks for (a quota, an admission policy, an invalid object). A temporary
// outage of results-api or NATS is not stalled: it is retried (Reconciling).
func setStalled(s *crowsnestv1alpha1.Scanner, o outcome) {
	c := metav1.Condition{Type: crowsnestv1alpha1.ConditionStalled, Status: metav1.ConditionTrue, ObservedGeneration: s.Generation}
	switch {
	case o.notPermitted != "":
		c.Reason, c.Message = crowsnestv1alpha1.ReasonNamespaceNotPermitted, notPermittedMessage(s.Namespace, o.notPermitted)
	case o.reconcileErr != nil && needsHuman(o.reconcileErr):
		c.Reason, c.Message = crowsnestv1alpha1.ReasonReconcileFailed, clip(o.reconcileErr.Error(), crowsnestv1alpha1.MaxConditionMessage)
	default:
		meta.RemoveStatusCondition(&s.Status.Conditions, crowsnestv1alpha1.ConditionStalled)
		return
	}
	meta.SetStatusCondition(&s.Status.Conditions, c)
}

// needsHuman tells whether a reconcile error is the API server refusing the
// request itself (403 from a quota or an admission policy, 400, 422), which
// retrying does not fix, rather than a failure that passes (a timeout, a
// conflict, an unavailable server).
func needsHuman(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err)
}

// notPermittedMessage says why namespace ns is not scanned and how to
// enable it: the chart's global.scan.namespaces feeds both the operator's
// --watch-namespaces and the Roles that let it act there.
func notPermittedMessage(ns, why string) string {
	return fmt.Sprintf("the operator may not scan namespace %s: %s. To scan it, add %q to the Helm chart's global.scan.namespaces "+
		"(it sets the operator's --watch-namespaces and grants its Role in each namespace). "+
		"Not retried until the operator restarts, this Scanner's spec changes or its %s annotation is set",
		ns, clip(why, crowsnestv1alpha1.MaxConditionMessage), ns, crowsnestv1alpha1.AnnotationRequestedAt)
}
