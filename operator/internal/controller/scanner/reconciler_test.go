package scanner

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	k8seventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
	"github.com/crowsnest-dev/crowsnest/operator/internal/scanjob"
	"github.com/crowsnest-dev/crowsnest/test/support/natstest"
	"github.com/crowsnest-dev/crowsnest/test/support/resultsapitest"
)

func TestScansEachUnscannedDigestOnceWithinTheCap(t *testing.T) {
	ns := newNamespace(t)
	api := resultsapitest.Start(t)
	_, natsURL := natstest.StartT(t)
	ctx := context.Background()

	d := []string{testDigest(1), testDigest(2), testDigest(3), testDigest(4), testDigest(5)}
	putReport(t, api, d[0]) // already scanned: never gets a Job
	runPod(t, ns, "web-1", nil, "docker-pullable://nginx@"+d[0], "nginx@"+d[1])
	runPod(t, ns, "web-2", nil, "docker.io/library/nginx@"+d[1]) // same digest as web-1's second container
	runPod(t, ns, "api", nil, "ghcr.io/org/api@"+d[2])
	runPod(t, ns, "worker", nil, "ghcr.io/org/worker:v2@"+d[3])
	runPod(t, ns, "ignored", map[string]string{crowsnestv1alpha1.DefaultIgnoreLabel: "true"}, "ghcr.io/org/secret@"+d[4])
	runPod(t, ns, "kind-loaded", nil, testDigest(9))
	// Someone else's active Job in the namespace must not count toward the cap.
	foreign := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "unrelated", Namespace: ns}, Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "x", Image: "busybox"}}}}}}
	if err := k8s.Create(ctx, foreign); err != nil {
		t.Fatal(err)
	}

	scanner := newScanner(t, ns, func(s *crowsnestv1alpha1.ScannerSpec) { s.MaxConcurrentScans = 2 })
	startOperator(t, ns, api.URL, natsURL, testOptions())

	eventually(t, 20*time.Second, "two scan jobs", jobCount(t, ns, 2))
	consistently(t, 2*time.Second, "the cap of 2 holds", jobCount(t, ns, 2))
	jobs := scanJobs(t, ns)
	jobsHaveFinalizer(t, jobs)
	want := map[string]bool{d[1]: true, d[2]: true, d[3]: true}
	for _, j := range jobs {
		digest := j.Annotations[scanjob.AnnotationDigest]
		if !want[digest] {
			t.Errorf("job %s scans %s, which needs no scan", j.Name, digest)
		}
		if j.Name != scanjob.JobName("default", digest) || len(j.Name) > 63 {
			t.Errorf("job name %q", j.Name)
		}
		if o := metav1.GetControllerOf(&j); o == nil || o.UID != scanner.UID || o.Kind != "Scanner" {
			t.Errorf("job %s owner %+v", j.Name, o)
		}
		if j.Labels[scanjob.LabelScanner] != "default" || j.Labels[scanjob.LabelDigestHash] != scanjob.DigestHash(digest) || j.Annotations[scanjob.AnnotationReason] != "new" {
			t.Errorf("job %s labels %v annotations %v", j.Name, j.Labels, j.Annotations)
		}
		spec := j.Spec.Template.Spec
		if spec.InitContainers[0].Image != "anchore/grype:v0.121.2" || spec.Containers[0].Image != "ghcr.io/crowsnest-dev/uploader:test" ||
			!strings.HasSuffix(spec.InitContainers[0].Args[0], "@"+digest) || *j.Spec.BackoffLimit != 0 || *j.Spec.ActiveDeadlineSeconds != 600 {
			t.Errorf("job %s spec: %+v", j.Name, spec)
		}
	}
	// Status while scanning: 5 images (4 pullable + 1 local), 1 scanned.
	eventually(t, 10*time.Second, "status while scanning", func() error {
		st := getScanner(t, ns).Status
		if st.Images != 5 || st.Scanned != 1 || st.Scanning != 2 || st.Queued != 1 || st.Failed != 1 || st.ObservedGeneration != 1 {
			return fmt.Errorf("status %+v", st)
		}
		if len(st.RecentFailures) != 1 || st.RecentFailures[0].Reason != crowsnestv1alpha1.FailureNotPullable {
			return fmt.Errorf("recent failures %+v", st.RecentFailures)
		}
		return conditions(t, ns, append(scanningOK, "Degraded=True/NotPullable")...)()
	})

	// Finish the first Job as the uploader would: report stored, Job complete.
	first := jobs[0]
	putReport(t, api, first.Annotations[scanjob.AnnotationDigest])
	finishJob(t, &first, true, nil, nil)
	eventually(t, 20*time.Second, "the completed job is replaced by the last digest's job", func() error {
		jobs := scanJobs(t, ns)
		if len(jobs) != 2 {
			return fmt.Errorf("%d jobs", len(jobs))
		}
		for _, j := range jobs {
			if j.UID == first.UID {
				return fmt.Errorf("completed job %s still there", j.Name)
			}
		}
		return nil
	})
	jobs = scanJobs(t, ns)
	for _, j := range jobs {
		putReport(t, api, j.Annotations[scanjob.AnnotationDigest])
		finishJob(t, &j, true, nil, nil)
	}
	eventually(t, 20*time.Second, "everything scanned", func() error {
		if err := jobCount(t, ns, 0)(); err != nil {
			return err
		}
		st := getScanner(t, ns).Status
		if st.Scanned != 4 || st.Scanning != 0 || st.Queued != 0 || st.LastScanTime == nil {
			return fmt.Errorf("status %+v", st)
		}
		// The local image stays unscannable: Degraded, and still Ready.
		return conditions(t, ns, "Ready=True/Reconciled", "ScansComplete=True/UpToDate", "Degraded=True/NotPullable", "Stalled=")()
	})

	// Events on NATS: per Job, image.needed then job.done, each once.
	evs := streamEvents(t, natsURL)
	seen := map[string]int{}
	for i, ev := range evs {
		if seen[ev.ID]++; seen[ev.ID] > 1 {
			t.Errorf("event %s (%s) delivered twice", ev.ID, ev.Type)
		}
		if ev.Type == eventsv1.TypeJobDone {
			var done eventsv1.JobDone
			if err := ev.Decode(&done); err != nil {
				t.Fatal(err)
			}
			if done.Outcome != eventsv1.OutcomeSucceeded || done.DurationSeconds <= 0 {
				t.Errorf("job.done %+v", done)
			}
			if !neededBefore(evs[:i], done.Job) {
				t.Errorf("job.done for %s came before its image.needed", done.Job)
			}
		}
	}
	if n := countType(evs, eventsv1.TypeImageNeeded); n != 3 {
		t.Errorf("%d image.needed events, want 3", n)
	}
	if n := countType(evs, eventsv1.TypeJobDone); n != 3 {
		t.Errorf("%d job.done events, want 3", n)
	}
	// Kubernetes Events on the Scanner.
	var kev k8seventsv1.EventList
	if err := k8s.List(ctx, &kev, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	reasons := map[string]int{}
	for _, e := range kev.Items {
		if e.Regarding.Kind == "Scanner" {
			reasons[e.Reason]++
		}
	}
	if reasons[EventJobCreated] != 3 || reasons[EventScanSucceeded] != 3 {
		t.Errorf("kubernetes events by reason: %v", reasons)
	}
}

func neededBefore(evs []eventsv1.Event, job string) bool {
	for _, ev := range evs {
		var n eventsv1.ImageNeeded
		if ev.Type == eventsv1.TypeImageNeeded && ev.Decode(&n) == nil && n.Job == job {
			return true
		}
	}
	return false
}

func countType(evs []eventsv1.Event, typ string) int {
	n := 0
	for _, ev := range evs {
		if ev.Type == typ {
			n++
		}
	}
	return n
}
