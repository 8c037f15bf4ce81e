package scanner

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
	"github.com/crowsnest-dev/crowsnest/operator/internal/scanjob"
	"github.com/crowsnest-dev/crowsnest/test/support/natstest"
	"github.com/crowsnest-dev/crowsnest/test/support/resultsapitest"
)

// TestRetryAfterForegroundTTLKeepsItsAttempt plays what a real cluster does
// to a failed scan Job whose TTL runs out before its retry: the TTL
// controller deletes it with foreground propagation, so the Job stays
// (finalizer foregroundDeletion) until the garbage collector has deleted
// its Pods — on a real node, until the kubelet has stopped them. The retry
// falls due meanwhile, releases the operator's finalizer and finds the
// name still taken. When the Job is finally gone, the retry must still be
// attempt 2 after the backoff, and the Scanner must show the image failed
// in between — not a fresh attempt 1 (seen on the real node: a digest whose
// scan status ended "done at attempt 1" after two Jobs).
func TestRetryAfterForegroundTTLKeepsItsAttempt(t *testing.T) {
	ns := newNamespace(t)
	api := resultsapitest.Start(t)
	_, natsURL := natstest.StartT(t)
	digest := testDigest(71)
	runPod(t, ns, "web", nil, "nginx@"+digest)
	newScanner(t, ns)
	startOperator(t, ns, api.URL, natsURL, testOptions()) // retry backoff 2s

	eventually(t, 20*time.Second, "a scan job", jobCount(t, ns, 1))
	first := scanJobs(t, ns)[0]
	finishJob(t, &first, false, exitedState(0, ""), exitedState(5, "results-api unreachable: dial tcp: connection refused"))
	eventually(t, 10*time.Second, "the failure recorded and its job.done delivered", func() error {
		j := scanJobs(t, ns)[0]
		if j.Annotations[scanjob.AnnotationPublished] != publishedDone {
			return fmt.Errorf("job annotations %v", j.Annotations)
		}
		return failedAt(t, ns, 1)
	})

	// The TTL controller's delete: foreground, so the apiserver adds the
	// foregroundDeletion finalizer, which only the garbage collector (not
	// running here: the test plays it) removes once the Pods are gone.
	if err := k8s.Delete(context.Background(), &first, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
		t.Fatal(err)
	}
	eventually(t, 15*time.Second, "the retry due, the operator's finalizer released, the name still taken", func() error {
		jobs := scanJobs(t, ns)
		if len(jobs) != 1 || jobs[0].UID != first.UID || controllerutil.ContainsFinalizer(&jobs[0], scanjob.Finalizer) ||
			!slices.Contains(jobs[0].Finalizers, metav1.FinalizerDeleteDependents) {
			return fmt.Errorf("%d jobs: %+v", len(jobs), jobMeta(jobs))
		}
		return nil
	})
	consistently(t, 2*time.Second, "the image shown failed while the old Job is deleted", func() error { return failedAt(t, ns, 1) })

	// The garbage collector's part: the Pods are gone, the Job goes.
	gone := scanJobs(t, ns)[0]
	controllerutil.RemoveFinalizer(&gone, metav1.FinalizerDeleteDependents)
	if err := k8s.Update(context.Background(), &gone); err != nil {
		t.Fatal(err)
	}
	eventually(t, 15*time.Second, "the retry created as attempt 2", func() error {
		jobs := scanJobs(t, ns)
		if len(jobs) != 1 || jobs[0].UID == first.UID {
			return fmt.Errorf("%d jobs: %+v", len(jobs), jobMeta(jobs))
		}
		if a := jobs[0].Annotations; a[scanjob.AnnotationAttempt] != "2" || a[scanjob.AnnotationReason] != string(eventsv1.NeedRetry) {
			return fmt.Errorf("the new Job's annotations %v, want attempt 2, reason retry", a)
		}
		return nil
	})
}

// failedAt checks that the Scanner lists the image failed at attempt.
func failedAt(t testing.TB, ns string, attempt int32) error {
	st := getScanner(t, ns).Status
	if st.Failed != 1 || len(st.RecentFailures) != 1 || st.RecentFailures[0].Attempt != attempt ||
		st.RecentFailures[0].Reason != crowsnestv1alpha1.FailureAPIUnreachable {
		return fmt.Errorf("status failed %d, recent failures %+v; want the image failed at attempt %d", st.Failed, st.RecentFailures, attempt)
	}
	return nil
}

// jobMeta is what a failing wait shows of scan Jobs.
func jobMeta(jobs []batchv1.Job) []string {
	out := make([]string, len(jobs))
	for i, j := range jobs {
		out[i] = fmt.Sprintf("%s uid=%s deleting=%v finalizers=%v annotations=%v", j.Name, j.UID, j.DeletionTimestamp != nil, j.Finalizers, j.Annotations)
	}
	return out
}
