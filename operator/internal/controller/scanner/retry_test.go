package scanner

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
	"github.com/crowsnest-dev/crowsnest/operator/internal/scanjob"
	"github.com/crowsnest-dev/crowsnest/test/support/natstest"
	"github.com/crowsnest-dev/crowsnest/test/support/resultsapitest"
)

func TestFailedScanIsClassifiedAndRetriedWithBackoff(t *testing.T) {
	ns := newNamespace(t)
	api := resultsapitest.Start(t)
	_, natsURL := natstest.StartT(t)
	runPod(t, ns, "web", nil, "nginx@"+testDigest(7))
	newScanner(t, ns)
	startOperator(t, ns, api.URL, natsURL, testOptions()) // retry backoff 2s, doubling

	eventually(t, 20*time.Second, "a scan job", jobCount(t, ns, 1))
	first := scanJobs(t, ns)[0]
	// Measured from before the Job fails: condition times have one-second
	// resolution, so the 2s backoff can run out up to a second early
	// counted from when the status shows the failure.
	failedAt := time.Now()
	finishJob(t, &first, false, exitedState(0, ""), exitedState(5, "results-api unreachable: dial tcp: connection refused"))

	eventually(t, 10*time.Second, "the failure in status", func() error {
		st := getScanner(t, ns).Status
		if st.Failed != 1 || len(st.RecentFailures) != 1 {
			return fmt.Errorf("status %+v", st)
		}
		f := st.RecentFailures[0]
		if f.Reason != crowsnestv1alpha1.FailureAPIUnreachable || f.Attempt != 1 || f.NextRetry == nil || !strings.Contains(f.Message, "connection refused") {
			return fmt.Errorf("failure %+v", f)
		}
		// A failed image degrades the Scanner; it stays Ready.
		return conditions(t, ns, "Ready=True/Reconciled", "Degraded=True/ScanFailed", "ScansComplete=True/UpToDate")()
	})
	// The failed Job stays (it holds the attempt count) until the retry.
	eventually(t, 15*time.Second, "a retry job with attempt 2", func() error {
		jobs := scanJobs(t, ns)
		if len(jobs) != 1 || jobs[0].UID == first.UID {
			return fmt.Errorf("%d jobs, still the first: %v", len(jobs), len(jobs) == 1)
		}
		if jobs[0].Annotations[scanjob.AnnotationAttempt] != "2" || jobs[0].Annotations[scanjob.AnnotationReason] != "retry" {
			return fmt.Errorf("annotations %v", jobs[0].Annotations)
		}
		return nil
	})
	if waited := time.Since(failedAt); waited < time.Second {
		t.Errorf("retried after %v; the backoff is 2s", waited)
	}
	second := scanJobs(t, ns)[0]
	finishJob(t, &second, false, exitedState(1, "GET https://index.docker.io/v2/library/nginx/manifests/sha256:...: UNAUTHORIZED: authentication required"), nil)
	eventually(t, 10*time.Second, "second failure classified", func() error {
		st := getScanner(t, ns).Status
		if len(st.RecentFailures) != 1 || st.RecentFailures[0].Reason != crowsnestv1alpha1.FailureImagePull || st.RecentFailures[0].Attempt != 2 {
			return fmt.Errorf("status %+v", st)
		}
		// Attempt 2 waits 4s: the next retry is about 4s after the failure.
		if d := time.Until(st.RecentFailures[0].NextRetry.Time); d < 2*time.Second || d > 5*time.Second {
			return fmt.Errorf("next retry in %v, want about 4s", d)
		}
		return nil
	})

	evs := streamEvents(t, natsURL)
	var done []eventsv1.JobDone
	for _, ev := range evs {
		if ev.Type == eventsv1.TypeJobDone {
			var d eventsv1.JobDone
			if err := ev.Decode(&d); err != nil {
				t.Fatal(err)
			}
			done = append(done, d)
		}
	}
	if len(done) != 2 || done[0].Reason != crowsnestv1alpha1.FailureAPIUnreachable || done[1].Reason != crowsnestv1alpha1.FailureImagePull ||
		done[0].Outcome != eventsv1.OutcomeFailed || done[1].Attempt != 2 {
		t.Errorf("job.done events: %+v", done)
	}
	if n := countType(evs, eventsv1.TypeImageNeeded); n != 2 {
		t.Errorf("%d image.needed events, want 2", n)
	}
}

func TestRescanAfterInterval(t *testing.T) {
	ns := newNamespace(t)
	api := resultsapitest.Start(t)
	putReport(t, api, testDigest(8))
	runPod(t, ns, "web", nil, "nginx@"+testDigest(8))
	// The shortest rescan interval the CRD admits is 1h: the operator's clock
	// runs 1h-6s ahead, so the report is due for a rescan 6s after it was
	// stored.
	newScanner(t, ns, func(s *crowsnestv1alpha1.ScannerSpec) { s.RescanInterval = &metav1.Duration{Duration: time.Hour} })
	ahead := time.Hour - 6*time.Second
	startOperator(t, ns, api.URL, "", testOptions(), func(d *Deps) { d.Now = func() time.Time { return time.Now().Add(ahead) } })

	eventually(t, 10*time.Second, "scanned and up to date", conditions(t, ns, upToDate...))
	if n := len(scanJobs(t, ns)); n != 0 {
		t.Fatalf("%d jobs for a freshly scanned digest", n)
	}
	// No Pod or Job changes from here: only the reconciler's timed wake-up
	// at scannedAt+6s can start the rescan.
	eventually(t, 15*time.Second, "a rescan job", jobCount(t, ns, 1))
	if r := scanJobs(t, ns)[0].Annotations[scanjob.AnnotationReason]; r != "rescan" {
		t.Errorf("reason %q, want rescan", r)
	}
}
