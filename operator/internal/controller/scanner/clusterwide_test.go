package scanner

import (
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
	"github.com/crowsnest-dev/crowsnest/operator/internal/scanjob"
	"github.com/crowsnest-dev/crowsnest/test/support/resultsapitest"
)

// clusterJobs lists the scan Jobs of several namespaces.
func clusterJobs(t testing.TB, namespaces ...string) []batchv1.Job {
	t.Helper()
	var all []batchv1.Job
	for _, ns := range namespaces {
		all = append(all, scanJobs(t, ns)...)
	}
	return all
}

func finished(j *batchv1.Job) bool {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// TestOneJobPerDigestAcrossNamespaces: a digest running in three namespaces,
// each with its own Scanner, gets one scan Job in the whole cluster, and the
// other Scanners count it as scanning. When that Job fails because its
// namespace could not pull the image, another namespace that runs it tries
// at once, still one Job at a time.
func TestOneJobPerDigestAcrossNamespaces(t *testing.T) {
	api := resultsapitest.Start(t)
	a, b, c := newNamespace(t), newNamespace(t), newNamespace(t)
	shared, onlyA, onlyB := testDigest(0x51), testDigest(0x52), testDigest(0x53)
	runPod(t, a, "web", nil, "ghcr.io/org/sidecar@"+shared, "ghcr.io/org/a@"+onlyA)
	runPod(t, b, "web", nil, "ghcr.io/org/sidecar@"+shared, "ghcr.io/org/b@"+onlyB)
	runPod(t, c, "web", nil, "ghcr.io/org/sidecar@"+shared)
	for _, ns := range []string{a, b, c} {
		newScanner(t, ns, func(s *crowsnestv1alpha1.ScannerSpec) { s.MaxConcurrentScans = 10 })
	}
	opts := testOptions()
	opts.WatchNamespaces = []string{a, b, c}
	startOperator(t, a, api.URL, "", opts)

	count := func(want int) func() error {
		return func() error {
			if n := len(clusterJobs(t, a, b, c)); n != want {
				return fmt.Errorf("%d scan jobs in the three namespaces, want %d", n, want)
			}
			return nil
		}
	}
	eventually(t, 20*time.Second, "one job per digest", count(3))
	consistently(t, 3*time.Second, "no second job for the shared digest", count(3))
	var sharedJob *batchv1.Job
	for _, j := range clusterJobs(t, a, b, c) {
		if j.Annotations[scanjob.AnnotationDigest] == shared {
			sharedJob = j.DeepCopy()
		}
	}
	if sharedJob == nil {
		t.Fatal("no job for the shared digest")
	}
	// Every Scanner that sees the digest counts it as scanning.
	eventually(t, 10*time.Second, "scanner of c counts the shared digest as scanning", func() error {
		s := getScanner(t, c)
		if s.Status.Images != 1 || s.Status.Scanning != 1 || s.Status.Queued != 0 {
			return fmt.Errorf("status of c: images %d scanning %d queued %d", s.Status.Images, s.Status.Scanning, s.Status.Queued)
		}
		return nil
	})

	// The registry refuses the first namespace's credentials.
	finishJob(t, sharedJob, false, exitedState(1, "failed to get image descriptor: GET https://ghcr.io/v2/org/sidecar: UNAUTHORIZED: authentication required"), nil)
	var retry *batchv1.Job
	eventually(t, 20*time.Second, "another namespace tries the shared digest at once", func() error {
		for _, j := range clusterJobs(t, a, b, c) {
			if j.Annotations[scanjob.AnnotationDigest] == shared && j.Namespace != sharedJob.Namespace {
				retry = j.DeepCopy()
				return nil
			}
		}
		return fmt.Errorf("only the failed job in %s", sharedJob.Namespace)
	})
	if retry.Annotations[scanjob.AnnotationAttempt] != "2" || retry.Annotations[scanjob.AnnotationReason] != "retry" {
		t.Errorf("the other namespace's job: attempt %q reason %q, want attempt 2 of a retry",
			retry.Annotations[scanjob.AnnotationAttempt], retry.Annotations[scanjob.AnnotationReason])
	}
	consistently(t, 3*time.Second, "one running job for the shared digest", func() error {
		running := 0
		for _, j := range clusterJobs(t, a, b, c) {
			if j.Annotations[scanjob.AnnotationDigest] == shared && !finished(&j) {
				running++
			}
		}
		if running != 1 {
			return fmt.Errorf("%d running jobs for the shared digest", running)
		}
		return nil
	})
}

// TestClusterCapIsExactAndFair: three Scanners that each may run 10 Jobs
// want 18 in all under a cluster-wide cap of 5: never more than 5 run; a
// slot freed by the Scanner that took the first ones goes to a Scanner that
// waited, not back to it; and as Jobs finish the rest start, each digest
// exactly once.
func TestClusterCapIsExactAndFair(t *testing.T) {
	api := resultsapitest.Start(t)
	namespaces := []string{newNamespace(t), newNamespace(t), newNamespace(t)}
	for i, ns := range namespaces {
		for k := range 6 {
			runPod(t, ns, fmt.Sprintf("app-%d", k), nil, fmt.Sprintf("ghcr.io/org/app@%s", testDigest(0x600+i*16+k)))
		}
		newScanner(t, ns, func(s *crowsnestv1alpha1.ScannerSpec) { s.MaxConcurrentScans = 10 })
	}
	opts := testOptions()
	opts.WatchNamespaces = namespaces
	opts.MaxConcurrentScans = 5
	startOperator(t, namespaces[0], api.URL, "", opts)

	jobsOf := map[string]map[string]bool{} // digest → Job UIDs
	maxRunning := 0
	observe := func() (running int, perNS map[string]int, jobs []batchv1.Job) {
		perNS = map[string]int{}
		jobs = clusterJobs(t, namespaces...)
		for _, j := range jobs {
			d := j.Annotations[scanjob.AnnotationDigest]
			if jobsOf[d] == nil {
				jobsOf[d] = map[string]bool{}
			}
			jobsOf[d][string(j.UID)] = true
			if !finished(&j) && j.DeletionTimestamp == nil {
				running++
				perNS[j.Namespace]++
			}
		}
		maxRunning = max(maxRunning, running)
		return running, perNS, jobs
	}
	runningIs := func(want int) func() error {
		return func() error {
			if n, perNS, _ := observe(); n != want {
				return fmt.Errorf("%d running (%v), want %d", n, perNS, want)
			}
			return nil
		}
	}
	finish := func(j *batchv1.Job) {
		putReport(t, api, j.Annotations[scanjob.AnnotationDigest])
		finishJob(t, j, true, nil, nil)
	}
	eventually(t, 20*time.Second, "five jobs", runningIs(5))
	consistently(t, 2*time.Second, "the cap of 5 holds", runningIs(5))

	// The namespace running the most gives two slots back.
	_, before, jobs := observe()
	hog := ""
	for ns, n := range before {
		if hog == "" || n > before[hog] {
			hog = ns
		}
	}
	freed := 0
	for i := range jobs {
		if j := &jobs[i]; j.Namespace == hog && freed < 2 && !finished(j) {
			finish(j)
			freed++
		}
	}
	eventually(t, 20*time.Second, "the freed slots taken", func() error {
		n, perNS, _ := observe()
		if n != 5 || perNS[hog] != before[hog]-2 {
			return fmt.Errorf("%d running, per namespace %v (before %v): want 5, %s at %d", n, perNS, before, hog, before[hog]-2)
		}
		return nil
	})
	consistently(t, 2*time.Second, "the namespaces that waited keep them", func() error {
		n, perNS, _ := observe()
		if n > 5 || perNS[hog] > before[hog]-2 {
			return fmt.Errorf("%d running, per namespace %v: the first namespace took a slot back from those that waited", n, perNS)
		}
		return nil
	})

	// Finish the running Jobs one wave at a time until every digest was
	// scanned.
	deadline := time.Now().Add(90 * time.Second)
	for {
		running, _, jobs := observe()
		if len(jobsOf) == 18 && running == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 90s: %d digests got a job, %d running", len(jobsOf), running)
		}
		for i := range jobs {
			if j := &jobs[i]; !finished(j) && j.DeletionTimestamp == nil {
				finish(j)
			}
		}
		time.Sleep(300 * time.Millisecond)
	}
	for d, uids := range jobsOf {
		if len(uids) != 1 {
			t.Errorf("digest %s got %d jobs, want 1", d, len(uids))
		}
	}
	if maxRunning > 5 {
		t.Errorf("%d jobs ran at once, above the cluster-wide cap of 5", maxRunning)
	}
}
