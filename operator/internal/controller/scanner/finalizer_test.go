package scanner

import (
	"context"
	"fmt"
	"strings"
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

// TestTTLDeletedJobsKeepTheirOutcome plays the worst moment for a Job's
// TTL: two scans finish (one fails, one succeeds) while the operator is
// stopped, their TTL deletes both, and NATS is down when the operator
// returns. The finalizer keeps both Jobs: their outcomes are recorded while
// they are being deleted, they stay until each job.done is delivered, the
// succeeded one then goes, and the failed one is replaced by attempt 2 (its
// attempt count survived), not attempt 1.
func TestTTLDeletedJobsKeepTheirOutcome(t *testing.T) {
	ns := newNamespace(t)
	api := resultsapitest.Start(t)
	nats, natsURL := natstest.StartT(t)
	fails, succeeds := testDigest(61), testDigest(62)
	runPod(t, ns, "web", nil, "nginx@"+fails, "redis@"+succeeds)
	newScanner(t, ns)
	op := startOperator(t, ns, api.URL, natsURL, testOptions())
	eventually(t, 20*time.Second, "two jobs, their image.needed delivered", func() error {
		jobs := scanJobs(t, ns)
		if len(jobs) != 2 {
			return fmt.Errorf("%d jobs", len(jobs))
		}
		for _, j := range jobs {
			if j.Annotations[scanjob.AnnotationPublished] != publishedNeeded {
				return fmt.Errorf("job %s annotations %v", j.Name, j.Annotations)
			}
		}
		return nil
	})

	op.stop()
	jobs := jobsByDigest(scanJobs(t, ns))
	finishJob(t, jobs[fails], false, exitedState(0, ""), exitedState(5, "results-api unreachable: dial tcp: connection refused"))
	putReport(t, api, succeeds)
	finishJob(t, jobs[succeeds], true, nil, nil)
	for _, j := range jobs {
		deleteAsTTL(t, j)
	}
	for _, j := range scanJobs(t, ns) {
		if j.DeletionTimestamp == nil || !controllerutil.ContainsFinalizer(&j, scanjob.Finalizer) {
			t.Fatalf("job %s after its TTL: deletionTimestamp %v, finalizers %v; want it held", j.Name, j.DeletionTimestamp, j.Finalizers)
		}
	}

	nats.Stop()
	startOperator(t, ns, api.URL, natsURL, testOptions())
	eventually(t, 20*time.Second, "outcomes recorded on the Jobs being deleted", func() error {
		got := jobsByDigest(scanJobs(t, ns))
		if f, s := got[fails], got[succeeds]; f == nil || s == nil ||
			f.Annotations[scanjob.AnnotationOutcome] != string(eventsv1.OutcomeFailed) ||
			!strings.HasPrefix(f.Annotations[scanjob.AnnotationFailure], crowsnestv1alpha1.FailureAPIUnreachable+": ") ||
			s.Annotations[scanjob.AnnotationOutcome] != string(eventsv1.OutcomeSucceeded) {
			var ann []map[string]string
			for _, j := range got {
				ann = append(ann, j.Annotations)
			}
			return fmt.Errorf("%d jobs, annotations %v", len(got), ann)
		}
		st := getScanner(t, ns).Status
		if len(st.RecentFailures) != 1 || st.RecentFailures[0].Reason != crowsnestv1alpha1.FailureAPIUnreachable || st.RecentFailures[0].Attempt != 1 {
			return fmt.Errorf("recent failures %+v", st.RecentFailures)
		}
		return nil
	})
	// The failed scan's retry falls due (2s) while its job.done cannot be
	// delivered: both Jobs are held, no retry replaces the failed one, and
	// the status keeps showing it failed.
	consistently(t, 3*time.Second, "both Jobs held while their job.done is undelivered", func() error {
		if st := getScanner(t, ns).Status; st.Failed != 1 || len(st.RecentFailures) != 1 || st.Scanning != 0 {
			return fmt.Errorf("status %+v", st)
		}
		got := scanJobs(t, ns)
		if len(got) != 2 {
			return fmt.Errorf("%d jobs", len(got))
		}
		for _, j := range got {
			if j.UID != jobs[j.Annotations[scanjob.AnnotationDigest]].UID || !controllerutil.ContainsFinalizer(&j, scanjob.Finalizer) {
				return fmt.Errorf("job %s changed: uid %s finalizers %v", j.Name, j.UID, j.Finalizers)
			}
		}
		return nil
	})

	if err := nats.Restart(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "the succeeded Job gone, the failed one replaced by attempt 2", func() error {
		got := scanJobs(t, ns)
		if len(got) != 1 {
			return fmt.Errorf("%d jobs", len(got))
		}
		j := got[0]
		if j.Annotations[scanjob.AnnotationDigest] != fails || j.UID == jobs[fails].UID || j.Annotations[scanjob.AnnotationAttempt] != "2" ||
			j.Annotations[scanjob.AnnotationReason] != string(eventsv1.NeedRetry) {
			return fmt.Errorf("job %s annotations %v", j.Name, j.Annotations)
		}
		return nil
	})
	var done []eventsv1.JobDone
	for _, ev := range streamEvents(t, natsURL) {
		if ev.Type == eventsv1.TypeJobDone {
			var d eventsv1.JobDone
			if err := ev.Decode(&d); err != nil {
				t.Fatal(err)
			}
			done = append(done, d)
		}
	}
	outcomes := map[string]string{}
	for _, d := range done {
		outcomes[d.Digest] += fmt.Sprintf("%s/%s/%d ", d.Outcome, d.Reason, d.Attempt)
	}
	if len(done) != 2 || outcomes[fails] != "failed/"+crowsnestv1alpha1.FailureAPIUnreachable+"/1 " || outcomes[succeeds] != "succeeded//1 " {
		t.Errorf("job.done events %v, want one per deleted Job", outcomes)
	}
}

// TestSucceededJobWithoutReportIsReportMissing: a Job that succeeds without
// its report reaching results-api (a wrong --uploader-api-url, a lost
// upload) is a failed scan, ReportMissing, retried with backoff as attempt
// 2, instead of a fresh attempt 1 at once, forever.
func TestSucceededJobWithoutReportIsReportMissing(t *testing.T) {
	ns := newNamespace(t)
	api := resultsapitest.Start(t)
	_, natsURL := natstest.StartT(t)
	digest := testDigest(63)
	runPod(t, ns, "web", nil, "nginx@"+digest)
	newScanner(t, ns)
	startOperator(t, ns, api.URL, natsURL, testOptions()) // retry backoff 2s

	eventually(t, 20*time.Second, "a scan job", jobCount(t, ns, 1))
	first := scanJobs(t, ns)[0]
	finishedAt := time.Now()
	finishJob(t, &first, true, nil, nil) // succeeded; nothing was uploaded

	eventually(t, 10*time.Second, "ReportMissing in the status", func() error {
		st := getScanner(t, ns).Status
		if len(st.RecentFailures) != 1 {
			return fmt.Errorf("status %+v", st)
		}
		if f := st.RecentFailures[0]; f.Reason != crowsnestv1alpha1.FailureReportMissing || f.Attempt != 1 || f.NextRetry == nil || !strings.Contains(f.Message, "--uploader-api-url") {
			return fmt.Errorf("failure %+v", f)
		}
		return conditions(t, ns, "Ready=True/Reconciled", "Degraded=True/ScanFailed")()
	})
	eventually(t, 15*time.Second, "attempt 2, a retry", func() error {
		jobs := scanJobs(t, ns)
		if len(jobs) != 1 || jobs[0].UID == first.UID {
			return fmt.Errorf("%d jobs, still the first: %v", len(jobs), len(jobs) == 1)
		}
		if jobs[0].Annotations[scanjob.AnnotationAttempt] != "2" || jobs[0].Annotations[scanjob.AnnotationReason] != string(eventsv1.NeedRetry) {
			return fmt.Errorf("annotations %v", jobs[0].Annotations)
		}
		return nil
	})
	if waited := time.Since(finishedAt); waited < time.Second {
		t.Errorf("retried after %v; the backoff is 2s", waited)
	}
	var done []eventsv1.JobDone
	for _, ev := range streamEvents(t, natsURL) {
		var d eventsv1.JobDone
		if ev.Type == eventsv1.TypeJobDone && ev.Decode(&d) == nil {
			done = append(done, d)
		}
	}
	if len(done) != 1 || done[0].Outcome != eventsv1.OutcomeFailed || done[0].Reason != crowsnestv1alpha1.FailureReportMissing || done[0].Attempt != 1 {
		t.Errorf("job.done events %+v, want one failed ReportMissing for attempt 1", done)
	}

	// Once the upload works, the digest is scanned and the failure clears.
	second := scanJobs(t, ns)[0]
	putReport(t, api, digest)
	finishJob(t, &second, true, nil, nil)
	eventually(t, 15*time.Second, "scanned, the Job retired", func() error {
		if err := jobCount(t, ns, 0)(); err != nil {
			return err
		}
		return conditions(t, ns, upToDate...)()
	})
}

// TestDeletedScannerReleasesItsJobs: whether a Scanner is deleted at once
// (Background) or waits for its Jobs (Foreground), the operator removes its
// finalizer from every Job of the Scanner, the failed one it was holding for
// a retry included, so neither the Jobs nor the Scanner's deletion wait
// forever. envtest runs no garbage collector: the test deletes the Jobs
// itself and checks that nothing holds them.
func TestDeletedScannerReleasesItsJobs(t *testing.T) {
	for _, policy := range []metav1.DeletionPropagation{metav1.DeletePropagationBackground, metav1.DeletePropagationForeground} {
		t.Run(string(policy), func(t *testing.T) {
			ctx := context.Background()
			ns := newNamespace(t)
			api := resultsapitest.Start(t)
			runPod(t, ns, "web", nil, "nginx@"+testDigest(64), "redis@"+testDigest(65))
			s := newScanner(t, ns)
			opts := testOptions()
			opts.RetryBase, opts.RetryMax = time.Hour, time.Hour // the failed Job is held
			startOperator(t, ns, api.URL, "", opts)
			eventually(t, 20*time.Second, "two scan jobs", jobCount(t, ns, 2))
			failed := scanJobs(t, ns)[0]
			finishJob(t, &failed, false, nil, nil)
			eventually(t, 10*time.Second, "the failure recorded", func() error {
				if f := getScanner(t, ns).Status.RecentFailures; len(f) != 1 || f[0].NextRetry == nil {
					return fmt.Errorf("recent failures %+v", f)
				}
				return nil
			})
			for _, j := range scanJobs(t, ns) {
				if !controllerutil.ContainsFinalizer(&j, scanjob.Finalizer) {
					t.Fatalf("job %s has no finalizer before its Scanner is deleted", j.Name)
				}
			}

			if err := k8s.Delete(ctx, s, client.PropagationPolicy(policy)); err != nil {
				t.Fatal(err)
			}
			eventually(t, 10*time.Second, "no job holds the operator's finalizer", func() error {
				for _, j := range scanJobs(t, ns) {
					if controllerutil.ContainsFinalizer(&j, scanjob.Finalizer) {
						return fmt.Errorf("job %s still has it", j.Name)
					}
				}
				return nil
			})
			for _, j := range scanJobs(t, ns) {
				deleteAsTTL(t, &j)
			}
			eventually(t, 5*time.Second, "the jobs are gone", jobCount(t, ns, 0))
		})
	}
}

// TestRequestedAtForcesAReconcile: the crowsnest.dev/requested-at
// annotation reconciles an idle Scanner. Its report is deleted in a
// results-api that publishes no events, so nothing else tells the operator;
// the annotation does, and the digest is scanned again.
func TestRequestedAtForcesAReconcile(t *testing.T) {
	ns := newNamespace(t)
	api := resultsapitest.Start(t)
	digest := testDigest(66)
	putReport(t, api, digest)
	runPod(t, ns, "web", nil, "nginx@"+digest)
	newScanner(t, ns)
	startOperator(t, ns, api.URL, "", testOptions()) // lookup answers cached 500ms
	eventually(t, 10*time.Second, "scanned and up to date", conditions(t, ns, upToDate...))

	deleteReport(t, api, digest)
	consistently(t, 2*time.Second, "no reconcile, so no job, without a trigger", jobCount(t, ns, 0))
	requestScan(t, ns, time.Now().UTC().Format(time.RFC3339))
	eventually(t, 10*time.Second, "a scan job after requested-at", jobCount(t, ns, 1))
	if r := scanJobs(t, ns)[0].Annotations[scanjob.AnnotationReason]; r != string(eventsv1.NeedNew) {
		t.Errorf("reason %q, want new (the report is gone)", r)
	}
}

// jobsHaveFinalizer checks that every Job carries the operator's finalizer.
func jobsHaveFinalizer(t testing.TB, jobs []batchv1.Job) {
	t.Helper()
	for _, j := range jobs {
		if !controllerutil.ContainsFinalizer(&j, scanjob.Finalizer) {
			t.Errorf("job %s finalizers %v, want %s", j.Name, j.Finalizers, scanjob.Finalizer)
		}
	}
}
