package scanner

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
	"github.com/crowsnest-dev/crowsnest/test/support/resultsapitest"
)

// TestRefusedJobShowsInStatus: the API server refuses every scan Job (a
// ResourceQuota allows none), so every reconcile fails; the Scanner's status
// must say so, and say so no longer once the Job can be created.
func TestRefusedJobShowsInStatus(t *testing.T) {
	ns := newNamespace(t)
	api := resultsapitest.Start(t)
	ctx := context.Background()
	noJobs := corev1.ResourceList{"count/jobs.batch": resource.MustParse("0")}
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "no-jobs", Namespace: ns}, Spec: corev1.ResourceQuotaSpec{Hard: noJobs}}
	if err := k8s.Create(ctx, quota); err != nil {
		t.Fatal(err)
	}
	// envtest runs no quota controller: write the usage it would compute, so
	// that admission enforces the quota.
	quota.Status = corev1.ResourceQuotaStatus{Hard: noJobs, Used: corev1.ResourceList{"count/jobs.batch": resource.MustParse("0")}}
	if err := k8s.Status().Update(ctx, quota); err != nil {
		t.Fatal(err)
	}
	runPod(t, ns, "web", nil, "nginx@"+testDigest(31))
	newScanner(t, ns)
	startOperator(t, ns, api.URL, "", testOptions())

	eventually(t, 20*time.Second, "Ready=False ReconcileFailed with the API server's refusal", func() error {
		s := getScanner(t, ns)
		ready := meta.FindStatusCondition(s.Status.Conditions, crowsnestv1alpha1.ConditionReady)
		if ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != crowsnestv1alpha1.ReasonReconcileFailed || !strings.Contains(ready.Message, "exceeded quota") {
			return fmt.Errorf("Ready = %+v", ready)
		}
		if !meta.IsStatusConditionTrue(s.Status.Conditions, crowsnestv1alpha1.ConditionStalled) || s.Status.ObservedGeneration != s.Generation {
			return fmt.Errorf("status %+v", s.Status)
		}
		return nil
	})
	if n := len(scanJobs(t, ns)); n != 0 {
		t.Fatalf("%d scan jobs despite the quota", n)
	}

	if err := k8s.Delete(ctx, quota); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the scan job once the quota is gone", jobCount(t, ns, 1))
	eventually(t, 10*time.Second, "the failure cleared from the status", func() error {
		if err := conditions(t, ns, scanningOK...)(); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(getScanner(t, ns).Status.Conditions, crowsnestv1alpha1.ConditionStalled); c != nil {
			return fmt.Errorf("Stalled = %+v", c)
		}
		return nil
	})
}
