package controller

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
)

func TestSetStatus(t *testing.T) {
	tests := []struct {
		name        string
		out         outcome
		ready       metav1.ConditionStatus
		reason      string
		reconciling bool
		stalled     bool
	}{
		{"up to date", outcome{plan: plan{images: 3, scanned: 3}}, metav1.ConditionTrue, crowsnestv1alpha1.ReasonUpToDate, false, false},
		{"scanning", outcome{plan: plan{images: 3, scanned: 1, scanning: 2}}, metav1.ConditionFalse, crowsnestv1alpha1.ReasonScanning, true, false},
		{"failed", outcome{plan: plan{images: 3, scanned: 2, failed: 1}}, metav1.ConditionFalse, crowsnestv1alpha1.ReasonScanFailed, false, false},
		{"api down", outcome{plan: plan{images: 3}, lookupErr: errors.New("connection refused")}, metav1.ConditionFalse, crowsnestv1alpha1.ReasonResultsAPIUnavailable, false, true},
		{"nats down", outcome{plan: plan{images: 3, scanned: 3}, eventsErr: errors.New("not connected")}, metav1.ConditionFalse, crowsnestv1alpha1.ReasonEventsUndelivered, false, false},
		{"reconcile failed", outcome{plan: plan{images: 3, scanning: 2}, reconcileErr: errors.New(`jobs.batch "x" is forbidden: exceeded quota`)}, metav1.ConditionFalse, ReasonReconcileFailed, false, true},
		{"namespace not permitted", outcome{notPermitted: "the API server forbids the operator to create jobs.batch there"}, metav1.ConditionFalse, ReasonNamespaceNotPermitted, false, true},
		{"reconcile failed over a lookup failure", outcome{plan: plan{images: 3}, lookupErr: errors.New("refused"), reconcileErr: errors.New("list pods: timeout")}, metav1.ConditionFalse, ReasonReconcileFailed, false, true},
	}
	for _, tt := range tests {
		s := &crowsnestv1alpha1.Scanner{ObjectMeta: metav1.ObjectMeta{Generation: 4}}
		// A previous Stalled/Reconciling must be cleared when it no longer applies.
		meta.SetStatusCondition(&s.Status.Conditions, metav1.Condition{Type: crowsnestv1alpha1.ConditionStalled, Status: metav1.ConditionTrue, Reason: "x"})
		meta.SetStatusCondition(&s.Status.Conditions, metav1.Condition{Type: crowsnestv1alpha1.ConditionReconciling, Status: metav1.ConditionTrue, Reason: "x"})
		setStatus(s, tt.out)
		ready := meta.FindStatusCondition(s.Status.Conditions, crowsnestv1alpha1.ConditionReady)
		if ready.Status != tt.ready || ready.Reason != tt.reason || ready.ObservedGeneration != 4 || ready.Message == "" {
			t.Errorf("%s: Ready = %+v", tt.name, ready)
		}
		if got := meta.IsStatusConditionTrue(s.Status.Conditions, crowsnestv1alpha1.ConditionReconciling); got != tt.reconciling {
			t.Errorf("%s: Reconciling = %v", tt.name, got)
		}
		if got := meta.IsStatusConditionTrue(s.Status.Conditions, crowsnestv1alpha1.ConditionStalled); got != tt.stalled {
			t.Errorf("%s: Stalled = %v", tt.name, got)
		}
		wantImages := int32(3)
		if !tt.out.finished() {
			wantImages = 0 // counts are not written; TestSetStatusReconcileFailed
		}
		if s.Status.ObservedGeneration != 4 || s.Status.Images != wantImages {
			t.Errorf("%s: status = %+v", tt.name, s.Status)
		}
	}
}

// TestSetStatusReconcileFailed: a failed reconcile says why in Ready and
// Stalled, drops Reconciling, and keeps the counts and failures of the last
// reconcile that finished (it has no new ones to give).
func TestSetStatusReconcileFailed(t *testing.T) {
	s := &crowsnestv1alpha1.Scanner{ObjectMeta: metav1.ObjectMeta{Generation: 5}}
	setStatus(s, outcome{plan: plan{images: 4, scanned: 1, scanning: 2, queued: 1, failed: 1,
		failures: []crowsnestv1alpha1.ScanFailure{{Digest: dg('a'), Reason: crowsnestv1alpha1.FailureGrype}}}})
	last := *s.Status.DeepCopy()
	s.Generation = 6
	setStatus(s, outcome{reconcileErr: errors.New(`create scan job x: jobs.batch "x" is forbidden: exceeded quota: jobs, requested: count/jobs.batch=1, used: count/jobs.batch=0, limited: count/jobs.batch=0`)})
	st := s.Status
	if st.Images != last.Images || st.Scanned != last.Scanned || st.Scanning != last.Scanning || st.Queued != last.Queued || st.Failed != last.Failed || len(st.RecentFailures) != 1 {
		t.Errorf("counts changed: %+v, were %+v", st, last)
	}
	if st.ObservedGeneration != 6 {
		t.Errorf("observedGeneration %d, want 6", st.ObservedGeneration)
	}
	ready := meta.FindStatusCondition(st.Conditions, crowsnestv1alpha1.ConditionReady)
	if ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != ReasonReconcileFailed || ready.ObservedGeneration != 6 || !strings.Contains(ready.Message, "exceeded quota") {
		t.Errorf("Ready = %+v", ready)
	}
	if c := meta.FindStatusCondition(st.Conditions, crowsnestv1alpha1.ConditionStalled); c == nil || c.Status != metav1.ConditionTrue || c.Reason != ReasonReconcileFailed {
		t.Errorf("Stalled = %+v", c)
	}
	if c := meta.FindStatusCondition(st.Conditions, crowsnestv1alpha1.ConditionReconciling); c != nil {
		t.Errorf("Reconciling = %+v, want none while failing", c)
	}

	setStatus(s, outcome{reconcileErr: errors.New(strings.Repeat("x", 10*maxErrorMessage))})
	if ready := meta.FindStatusCondition(s.Status.Conditions, crowsnestv1alpha1.ConditionReady); len(ready.Message) > 2*maxErrorMessage {
		t.Errorf("an error of %d bytes gave a message of %d", 10*maxErrorMessage, len(ready.Message))
	}

	// The next reconcile that finishes replaces the failure.
	setStatus(s, outcome{plan: plan{images: 4, scanned: 4}})
	if ready := meta.FindStatusCondition(s.Status.Conditions, crowsnestv1alpha1.ConditionReady); ready.Reason != crowsnestv1alpha1.ReasonUpToDate {
		t.Errorf("Ready after recovery = %+v", ready)
	}
	if meta.FindStatusCondition(s.Status.Conditions, crowsnestv1alpha1.ConditionStalled) != nil {
		t.Error("Stalled left after recovery")
	}
}

// TestSetStatusNamespaceNotPermitted: a Scanner in a namespace the operator
// may not scan says so in Ready and Stalled, with how to enable it, and
// keeps the counts it had; a later reconcile that finishes clears it.
func TestSetStatusNamespaceNotPermitted(t *testing.T) {
	for _, why := range []string{
		"it is not one of the operator's --watch-namespaces",
		"the API server forbids the operator to create jobs.batch, delete jobs.batch there",
	} {
		s := &crowsnestv1alpha1.Scanner{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Generation: 2}}
		setStatus(s, outcome{plan: plan{images: 4, scanned: 1, scanning: 2, queued: 1}})
		last := *s.Status.DeepCopy()
		s.Generation = 3
		setStatus(s, outcome{notPermitted: why})
		st := s.Status
		if st.Images != last.Images || st.Scanned != last.Scanned || st.Scanning != last.Scanning || st.Queued != last.Queued || st.ObservedGeneration != 3 {
			t.Errorf("%s: status %+v, was %+v", why, st, last)
		}
		for _, typ := range []string{crowsnestv1alpha1.ConditionReady, crowsnestv1alpha1.ConditionStalled} {
			c := meta.FindStatusCondition(st.Conditions, typ)
			want := metav1.ConditionTrue
			if typ == crowsnestv1alpha1.ConditionReady {
				want = metav1.ConditionFalse
			}
			if c == nil || c.Status != want || c.Reason != ReasonNamespaceNotPermitted || c.ObservedGeneration != 3 {
				t.Fatalf("%s: %s = %+v", why, typ, c)
			}
			for _, part := range []string{"namespace team-b", why, `add "team-b" to the Helm chart's global.scan.namespaces`, AnnotationRequestedAt} {
				if !strings.Contains(c.Message, part) {
					t.Errorf("%s: %s message %q lacks %q", why, typ, c.Message, part)
				}
			}
		}
		if c := meta.FindStatusCondition(st.Conditions, crowsnestv1alpha1.ConditionReconciling); c != nil {
			t.Errorf("%s: Reconciling = %+v, want none", why, c)
		}

		setStatus(s, outcome{plan: plan{images: 4, scanned: 4}})
		if c := meta.FindStatusCondition(s.Status.Conditions, crowsnestv1alpha1.ConditionStalled); c != nil {
			t.Errorf("%s: Stalled left after a reconcile that finished: %+v", why, c)
		}
	}
}
