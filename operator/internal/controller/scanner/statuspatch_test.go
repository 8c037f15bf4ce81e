package scanner

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
)

// TestStatusPatchMatchesMergeFrom: for random pairs of statuses (fields
// set, changed, emptied, nil against empty lists, times with sub-second
// parts the encoding drops), statusPatch gives the patch client.MergeFrom
// gives for the two Scanners, diffed against impossible counts as the
// reconciler did before: the same JSON document.
func TestStatusPatchMatchesMergeFrom(t *testing.T) {
	rng := rand.New(rand.NewPCG(30, 1))
	t0 := time.Date(2026, 11, 30, 13, 0, 0, 0, time.UTC)
	cond := func(typ, reason string, sec int) metav1.Condition {
		return metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: reason, Message: "m " + reason,
			LastTransitionTime: metav1.NewTime(t0.Add(time.Duration(sec)*time.Second + 300*time.Millisecond))}
	}
	conditions := [][]metav1.Condition{nil, {},
		{cond("Ready", "Scanning", 0)},
		{cond("Ready", "Scanning", 1)},
		{cond("Ready", "Scanning", 0), cond("ScansComplete", "AllScanned", 0)},
		{cond("Ready", "Idle", 0), cond("ScansComplete", "AllScanned", 0)}}
	times := []*metav1.Time{nil, ptrTime(t0), ptrTime(t0.Add(400 * time.Millisecond)), ptrTime(t0.Add(time.Minute))}
	failure := func(i int) crowsnestv1alpha1.ScanFailure {
		return crowsnestv1alpha1.ScanFailure{Digest: testDigest(i), Image: "ghcr.io/org/app@" + testDigest(i), Reason: crowsnestv1alpha1.FailureImagePull,
			Message: "unauthorized", Attempt: int32(i), NextRetry: ptrTime(t0.Add(time.Duration(i) * time.Minute))}
	}
	failures := [][]crowsnestv1alpha1.ScanFailure{nil, {}, {failure(1)}, {failure(1), failure(2)}, {failure(2)}}
	status := func() crowsnestv1alpha1.ScannerStatus {
		return crowsnestv1alpha1.ScannerStatus{ObservedGeneration: int64(rng.IntN(3)), Conditions: conditions[rng.IntN(len(conditions))],
			Images: int32(rng.IntN(3)), Scanned: int32(rng.IntN(3)), Queued: int32(rng.IntN(2)), Scanning: int32(rng.IntN(2)), Failed: int32(rng.IntN(2)),
			LastScanTime: times[rng.IntN(len(times))], RecentFailures: failures[rng.IntN(len(failures))]}
	}
	s := &crowsnestv1alpha1.Scanner{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "default", UID: "u", Generation: 2,
		Labels: map[string]string{"a": "b"}}}
	for i := range 2000 {
		before, after := s.DeepCopy(), s.DeepCopy()
		before.Status, after.Status = status(), status()
		if i%5 == 0 {
			after.Status = *before.Status.DeepCopy() // unchanged but for what the counts say
			after.Status.Scanned++
		}
		base := before.DeepCopy()
		base.Status.Images, base.Status.Scanned, base.Status.Queued, base.Status.Scanning, base.Status.Failed = -1, -1, -1, -1, -1
		want, err := client.MergeFrom(base).Data(after)
		if err != nil {
			t.Fatal(err)
		}
		got, err := statusPatch(&before.Status, &after.Status)
		if err != nil {
			t.Fatal(err)
		}
		var g, w any
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(want, &w); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(g, w) {
			t.Fatalf("case %d: before %+v\nafter %+v\nstatusPatch %s\nMergeFrom   %s", i, before.Status, after.Status, got, want)
		}
	}
}

func ptrTime(t time.Time) *metav1.Time { v := metav1.NewTime(t); return &v }
