package scanner

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
)

// TestSetStatus: Ready is about the reconcile's health only; scan progress
// is ScansComplete, failed images Degraded; Reconciling is a retried
// temporary failure, Stalled one that needs a human.
func TestSetStatus(t *testing.T) {
	quota := apierrors.NewForbidden(schema.GroupResource{Group: "batch", Resource: "jobs"}, "x", errors.New("exceeded quota: jobs"))
	tests := []struct {
		name        string
		out         outcome
		ready       string // status/reason
		scans       string // ScansComplete status/reason; "" when not set
		degraded    string // Degraded status/reason; "" when not set
		reconciling string // Reconciling reason; "" when absent
		stalled     string // Stalled reason; "" when absent
	}{
		{"up to date", outcome{plan: plan{images: 3, scanned: 3}},
			"True/Reconciled", "True/UpToDate", "False/NoFailures", "", ""},
		{"routine scanning is ready", outcome{plan: plan{images: 3, scanned: 1, scanning: 2}},
			"True/Reconciled", "False/Scanning", "False/NoFailures", "", ""},
		{"queued only", outcome{plan: plan{images: 3, scanned: 2, queued: 1}},
			"True/Reconciled", "False/Queued", "False/NoFailures", "", ""},
		{"a failed image is degraded, still ready", outcome{plan: plan{images: 3, scanned: 2, failed: 1}},
			"True/Reconciled", "True/UpToDate", "True/ScanFailed", "", ""},
		{"only not pullable images", outcome{plan: plan{images: 3, scanned: 1, failed: 2, notPullable: 2}},
			"True/Reconciled", "True/UpToDate", "True/NotPullable", "", ""},
		{"results-api down: retried, not stalled", outcome{plan: plan{images: 3}, lookupErr: errors.New("connection refused")},
			"False/ResultsAPIUnavailable", "Unknown/ResultsAPIUnavailable", "False/NoFailures", "ResultsAPIUnavailable", ""},
		{"nats down", outcome{plan: plan{images: 3, scanned: 3}, eventsErr: errors.New("not connected")},
			"False/EventsUndelivered", "True/UpToDate", "False/NoFailures", "EventsUndelivered", ""},
		{"quota: needs a human", outcome{plan: plan{images: 3, scanning: 2}, reconcileErr: quota},
			"False/ReconcileFailed", "", "", "", "ReconcileFailed"},
		{"timeout: retried", outcome{plan: plan{images: 3, scanning: 2}, reconcileErr: errors.New("list pods: timeout")},
			"False/ReconcileFailed", "", "", "ReconcileFailed", ""},
		{"namespace not permitted", outcome{notPermitted: "the API server forbids the operator to create jobs.batch there"},
			"False/NamespaceNotPermitted", "", "", "", "NamespaceNotPermitted"},
		{"reconcile failed over a lookup failure", outcome{plan: plan{images: 3}, lookupErr: errors.New("refused"), reconcileErr: errors.New("list pods: timeout")},
			"False/ReconcileFailed", "", "", "ReconcileFailed", ""},
	}
	cond := func(s *crowsnestv1alpha1.Scanner, typ string) string {
		c := meta.FindStatusCondition(s.Status.Conditions, typ)
		if c == nil {
			return ""
		}
		if c.ObservedGeneration != 4 || c.Message == "" {
			t.Errorf("%s = %+v: want observedGeneration 4 and a message", typ, c)
		}
		return string(c.Status) + "/" + c.Reason
	}
	reason := func(s *crowsnestv1alpha1.Scanner, typ string) string {
		c := meta.FindStatusCondition(s.Status.Conditions, typ)
		if c == nil {
			return ""
		}
		if c.Status != metav1.ConditionTrue {
			t.Errorf("%s = %+v: present but not True", typ, c)
		}
		return c.Reason
	}
	for _, tt := range tests {
		s := &crowsnestv1alpha1.Scanner{ObjectMeta: metav1.ObjectMeta{Generation: 4}}
		// A previous Stalled/Reconciling must be cleared when it no longer applies.
		meta.SetStatusCondition(&s.Status.Conditions, metav1.Condition{Type: crowsnestv1alpha1.ConditionStalled, Status: metav1.ConditionTrue, Reason: "x", ObservedGeneration: 4, Message: "m"})
		meta.SetStatusCondition(&s.Status.Conditions, metav1.Condition{Type: crowsnestv1alpha1.ConditionReconciling, Status: metav1.ConditionTrue, Reason: "x", ObservedGeneration: 4, Message: "m"})
		setStatus(s, tt.out)
		got := []string{cond(s, crowsnestv1alpha1.ConditionReady), cond(s, crowsnestv1alpha1.ConditionScansComplete), cond(s, crowsnestv1alpha1.ConditionDegraded),
			reason(s, crowsnestv1alpha1.ConditionReconciling), reason(s, crowsnestv1alpha1.ConditionStalled)}
		want := []string{tt.ready, tt.scans, tt.degraded, tt.reconciling, tt.stalled}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%s: Ready, ScansComplete, Degraded, Reconciling, Stalled = %q, want %q", tt.name, got, want)
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

// TestSetStatusMessagesCount: the scan conditions say how many images are
// where.
func TestSetStatusMessagesCount(t *testing.T) {
	s := &crowsnestv1alpha1.Scanner{}
	setStatus(s, outcome{plan: plan{images: 9, scanned: 4, scanning: 2, queued: 1, failed: 2, notPullable: 1}})
	for typ, want := range map[string]string{
		crowsnestv1alpha1.ConditionScansComplete: "2 scanning, 1 queued; 4 of 9 images have a current report",
		crowsnestv1alpha1.ConditionDegraded:      "2 of 9 images could not be scanned: 1 failed (retried with backoff), 1 cannot be pulled",
	} {
		if c := meta.FindStatusCondition(s.Status.Conditions, typ); c == nil || !strings.Contains(c.Message, want) {
			t.Errorf("%s = %+v, want a message with %q", typ, c, want)
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
	quota := apierrors.NewForbidden(schema.GroupResource{Group: "batch", Resource: "jobs"}, "x",
		errors.New("exceeded quota: jobs, requested: count/jobs.batch=1, used: count/jobs.batch=0, limited: count/jobs.batch=0"))
	setStatus(s, outcome{reconcileErr: fmt.Errorf("create scan job x: %w", quota)})
	st := s.Status
	if st.Images != last.Images || st.Scanned != last.Scanned || st.Scanning != last.Scanning || st.Queued != last.Queued || st.Failed != last.Failed || len(st.RecentFailures) != 1 {
		t.Errorf("counts changed: %+v, were %+v", st, last)
	}
	if st.ObservedGeneration != 6 {
		t.Errorf("observedGeneration %d, want 6", st.ObservedGeneration)
	}
	ready := meta.FindStatusCondition(st.Conditions, crowsnestv1alpha1.ConditionReady)
	if ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != crowsnestv1alpha1.ReasonReconcileFailed || ready.ObservedGeneration != 6 || !strings.Contains(ready.Message, "exceeded quota") {
		t.Errorf("Ready = %+v", ready)
	}
	if c := meta.FindStatusCondition(st.Conditions, crowsnestv1alpha1.ConditionStalled); c == nil || c.Status != metav1.ConditionTrue || c.Reason != crowsnestv1alpha1.ReasonReconcileFailed {
		t.Errorf("Stalled = %+v", c)
	}
	if c := meta.FindStatusCondition(st.Conditions, crowsnestv1alpha1.ConditionReconciling); c != nil {
		t.Errorf("Reconciling = %+v, want none while stalled on a quota", c)
	}
	// What the last finished reconcile knew about the scans stays.
	if c := meta.FindStatusCondition(st.Conditions, crowsnestv1alpha1.ConditionScansComplete); c == nil || c.Reason != crowsnestv1alpha1.ReasonScanning || c.ObservedGeneration != 5 {
		t.Errorf("ScansComplete = %+v, want the last reconcile's Scanning", c)
	}
	if c := meta.FindStatusCondition(st.Conditions, crowsnestv1alpha1.ConditionDegraded); c == nil || c.Reason != crowsnestv1alpha1.ReasonScanFailed {
		t.Errorf("Degraded = %+v, want the last reconcile's ScanFailed", c)
	}

	setStatus(s, outcome{reconcileErr: errors.New(strings.Repeat("x", 10*crowsnestv1alpha1.MaxConditionMessage))})
	if ready := meta.FindStatusCondition(s.Status.Conditions, crowsnestv1alpha1.ConditionReady); len(ready.Message) > 2*crowsnestv1alpha1.MaxConditionMessage {
		t.Errorf("an error of %d bytes gave a message of %d", 10*crowsnestv1alpha1.MaxConditionMessage, len(ready.Message))
	}

	// The next reconcile that finishes replaces the failure.
	setStatus(s, outcome{plan: plan{images: 4, scanned: 4}})
	if ready := meta.FindStatusCondition(s.Status.Conditions, crowsnestv1alpha1.ConditionReady); ready.Reason != crowsnestv1alpha1.ReasonReconciled {
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
			if c == nil || c.Status != want || c.Reason != crowsnestv1alpha1.ReasonNamespaceNotPermitted || c.ObservedGeneration != 3 {
				t.Fatalf("%s: %s = %+v", why, typ, c)
			}
			for _, part := range []string{"namespace team-b", why, `add "team-b" to the Helm chart's global.scan.namespaces`, crowsnestv1alpha1.AnnotationRequestedAt} {
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
