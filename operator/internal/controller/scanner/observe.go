package scanner

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
	"github.com/crowsnest-dev/crowsnest/operator/internal/discovery"
	"github.com/crowsnest-dev/crowsnest/operator/internal/scanjob"
)

// observation is a reconcile's view of the world.
type observation struct {
	observed
	lookupErr error
	// foreign are Jobs labelled with this Scanner's name but controlled by
	// another object (an earlier Scanner of the same name): not this
	// Scanner's to schedule, only to let go (release).
	foreign []*batchv1.Job
}

func (r *Reconciler) observe(ctx context.Context, s *crowsnestv1alpha1.Scanner) (observation, error) {
	now := r.Now()
	// The cache's Pods are read in place, never copied: at 100,000 Pods a
	// copy per reconcile was most of the operator's garbage.
	inv := discovery.Collect(r.pods.InNamespace(s.Namespace), s.Spec.EffectiveIgnoreLabel())
	jobs, elsewhere, foreign, err := r.observeJobs(ctx, s, inv.Targets)
	if err != nil {
		return observation{}, err
	}
	owner := client.ObjectKeyFromObject(s)
	claimed := map[string]bool{}
	for d := range inv.Targets {
		switch {
		case jobs[d] != nil:
			r.budget.Release(d, owner) // the cache shows its Job now
		case elsewhere[d] != nil && elsewhere[d].result.phase == jobActive:
		case r.budget.ClaimedElsewhere(d, owner):
			// Another Scanner just created its Job; the cache does not
			// show it yet.
			elsewhere[d] = &scanJob{digest: d, result: jobResult{phase: jobActive}}
		case r.budget.Claimed(d, owner):
			claimed[d] = true
		}
	}
	want := make(map[string]time.Time, len(inv.Targets))
	for d := range inv.Targets {
		switch j := jobs[d]; {
		case j != nil && j.result.phase == jobSucceeded:
			// Decides whether the report arrived: only a fresh answer will
			// do (condition times have one-second resolution).
			want[d] = now
		case j != nil && j.result.phase == jobFailed:
			want[d] = j.result.finishedAt.Add(time.Second)
		default:
			want[d] = time.Time{}
		}
	}
	obs := observation{foreign: foreign, observed: observed{
		now: now, namespace: s.Namespace, inventory: inv, jobs: jobs, elsewhere: elsewhere, claimed: claimed,
		rescanInterval: s.Spec.EffectiveRescanInterval(), jitter: r.Options.RescanJitter,
		maxConcurrent: s.Spec.EffectiveMaxConcurrentScans(),
		backoff:       backoff{base: r.Options.RetryBase, max: r.Options.RetryMax},
		recorded:      recordedFailures(s.Status.RecentFailures),
	}}
	obs.reports = map[string]time.Time{}
	if len(want) > 0 {
		reports, err := r.Lookup.Lookup(ctx, want)
		if err != nil {
			obs.reports, obs.lookupErr = nil, err
		} else {
			obs.reports = reports
		}
	}
	settleSucceeded(obs.observed)
	return obs, nil
}

// observeJobs reads the scan Jobs from the cache: the Scanner's own (those
// being deleted included: a Job's finalizer keeps it until its outcome is
// recorded and delivered and it is replaced or retired), the Jobs other
// Scanners run for the digests of targets (elsewhere). A recorded outcome
// wins over the Job's conditions, so a decision once recorded
// (ReportMissing on a Job that succeeded, say) holds. Jobs created a moment
// ago that the cache does not show yet are the budget's claims
// (scanbudget). It reads those Jobs alone, through the cache's field
// indexes (jobcache.go): a reconcile costs the Jobs it is about, not every
// scan Job of the cluster.
func (r *Reconciler) observeJobs(ctx context.Context, s *crowsnestv1alpha1.Scanner, targets map[string]*discovery.Target) (jobs, elsewhere map[string]*scanJob, foreign []*batchv1.Job, err error) {
	own, err := r.jobIndex.jobs(ctx, r, jobScannerField, s.Name, s.Namespace, scanJobLabel)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("list scan jobs: %w", err)
	}
	jobs = map[string]*scanJob{}
	for _, job := range own {
		digest := job.Annotations[scanjob.AnnotationDigest]
		if discovery.ValidDigest(digest) != nil {
			continue
		}
		if owner := metav1.GetControllerOf(job); owner == nil || owner.UID != s.UID {
			// Labelled with this Scanner's name but controlled by another
			// object (an earlier Scanner of the same name).
			foreign = append(foreign, job.DeepCopy())
			continue
		}
		if jobs[digest] != nil {
			continue
		}
		j := readJob(job)
		// The cache's objects are shared: the Job is copied before the
		// reconcile annotates it.
		j.job = job.DeepCopy()
		if j.result.phase == jobFailed && job.Annotations[scanjob.AnnotationFailure] == "" {
			var pods corev1.PodList
			if err := r.List(ctx, &pods, client.InNamespace(s.Namespace), client.MatchingLabels{batchv1.JobNameLabel: job.Name}, client.UnsafeDisableDeepCopy); err != nil {
				return nil, nil, nil, fmt.Errorf("list pods of job %s: %w", job.Name, err)
			}
			j.result = jobOutcome(job, pods.Items)
		}
		jobs[digest] = j
	}
	elsewhere = map[string]*scanJob{}
	for digest := range targets {
		list, err := r.jobIndex.jobs(ctx, r, jobDigestField, digest, "", scanJobLabel)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("list scan jobs of %s: %w", digest, err)
		}
		for _, job := range list {
			if job.Namespace == s.Namespace && job.Labels[scanjob.LabelScanner] == s.Name {
				continue // this Scanner's own (above)
			}
			// Another Scanner's: the oldest Job of a digest speaks for it,
			// and an active one wins over a finished one.
			j := readJob(job)
			if e := elsewhere[digest]; e == nil || (e.result.phase != jobActive && j.result.phase == jobActive) {
				elsewhere[digest] = j
			}
		}
	}
	return jobs, elsewhere, foreign, nil
}

// readJob reads a scan Job's digest, attempt and outcome; a failure recorded
// on the Job wins over its conditions.
func readJob(job *batchv1.Job) *scanJob {
	attempt, _ := strconv.Atoi(job.Annotations[scanjob.AnnotationAttempt])
	j := &scanJob{job: job, digest: job.Annotations[scanjob.AnnotationDigest], image: job.Annotations[scanjob.AnnotationImage], attempt: max(attempt, 1),
		reason: job.Annotations[scanjob.AnnotationReason], result: jobOutcome(job, nil)}
	if recorded := job.Annotations[scanjob.AnnotationFailure]; j.result.phase != jobActive &&
		job.Annotations[scanjob.AnnotationOutcome] == string(eventsv1.OutcomeFailed) && recorded != "" {
		j.result.phase = jobFailed
		j.result.reason, j.result.message, _ = strings.Cut(recorded, ": ")
	}
	return j
}

// settleSucceeded decides what each succeeded Job whose outcome is not yet
// recorded amounts to, for a digest that still runs. A Job succeeds when the
// uploader got an answer, but a wrong --uploader-api-url or a lost upload
// can leave results-api without the report: then the scan failed
// (ReportMissing), with attempts and backoff like any failure, instead of
// starting over at attempt 1 forever. Until the lookup answers, the outcome
// is left unrecorded (unconfirmed). It is pure.
func settleSucceeded(o observed) {
	for digest, j := range o.jobs {
		if j.result.phase != jobSucceeded || j.job.Annotations[scanjob.AnnotationOutcome] != "" || o.inventory.Targets[digest] == nil {
			continue
		}
		if o.reports == nil {
			j.unconfirmed = true
			continue
		}
		scannedAt, found := o.reports[digest]
		if due, _ := needsScan(scannedAt, found, o.now, o.interval(digest)); due {
			j.result = jobResult{phase: jobFailed, finishedAt: j.result.finishedAt, reason: crowsnestv1alpha1.FailureReportMissing,
				message: "the scan Job succeeded, but results-api has no current report for the digest: check the operator's --uploader-api-url (the URL scan Pods upload to) and the results-api logs"}
		}
	}
}

// recordedFailures indexes the status's failures by digest, leaving out
// images that cannot be scanned at all (they have no attempts).
func recordedFailures(fs []crowsnestv1alpha1.ScanFailure) map[string]crowsnestv1alpha1.ScanFailure {
	m := make(map[string]crowsnestv1alpha1.ScanFailure, len(fs))
	for _, f := range fs {
		if f.Reason != crowsnestv1alpha1.FailureNotPullable {
			m[f.Digest] = f
		}
	}
	return m
}
