package controller

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

func (r *ScannerReconciler) observe(ctx context.Context, s *crowsnestv1alpha1.Scanner) (observation, error) {
	now := r.Now()
	var pods corev1.PodList
	// The cached Pods are only read: skipping the deep copy of every Pod
	// is most of a reconcile's cost with thousands of Pods.
	if err := r.List(ctx, &pods, client.InNamespace(s.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return observation{}, fmt.Errorf("list pods: %w", err)
	}
	inv := discovery.Collect(pods.Items, s.Spec.EffectiveIgnoreLabel())
	jobs, foreign, err := r.observeJobs(ctx, s)
	if err != nil {
		return observation{}, err
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
		now: now, inventory: inv, jobs: jobs,
		rescanInterval: s.Spec.EffectiveRescanInterval(),
		maxConcurrent:  s.Spec.EffectiveMaxConcurrentScans(),
		backoff:        backoff{base: r.Options.RetryBase, max: r.Options.RetryMax},
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

// observeJobs lists the Scanner's Jobs, those being deleted included: a
// Job's finalizer keeps it until its outcome is recorded and delivered and
// it is replaced or retired. A recorded outcome wins over the Job's
// conditions, so a decision once recorded (ReportMissing on a Job that
// succeeded, say) holds.
func (r *ScannerReconciler) observeJobs(ctx context.Context, s *crowsnestv1alpha1.Scanner) (map[string]*scanJob, []*batchv1.Job, error) {
	var list batchv1.JobList
	if err := r.APIReader.List(ctx, &list, client.InNamespace(s.Namespace), client.MatchingLabels(scanjob.SelectorLabels(s.Name))); err != nil {
		return nil, nil, fmt.Errorf("list scan jobs: %w", err)
	}
	jobs := make(map[string]*scanJob, len(list.Items))
	var foreign []*batchv1.Job
	for i := range list.Items {
		job := &list.Items[i]
		if owner := metav1.GetControllerOf(job); owner == nil || owner.UID != s.UID {
			foreign = append(foreign, job)
			continue
		}
		digest := job.Annotations[scanjob.AnnotationDigest]
		if discovery.ValidDigest(digest) != nil || jobs[digest] != nil {
			continue
		}
		attempt, _ := strconv.Atoi(job.Annotations[scanjob.AnnotationAttempt])
		j := &scanJob{job: job, digest: digest, image: job.Annotations[scanjob.AnnotationImage], attempt: max(attempt, 1),
			reason: job.Annotations[scanjob.AnnotationReason], result: jobOutcome(job, nil)}
		recorded := job.Annotations[scanjob.AnnotationFailure]
		switch {
		case j.result.phase != jobActive && job.Annotations[scanjob.AnnotationOutcome] == string(eventsv1.OutcomeFailed) && recorded != "":
			j.result.phase = jobFailed
			j.result.reason, j.result.message, _ = strings.Cut(recorded, ": ")
		case j.result.phase == jobFailed:
			var pods corev1.PodList
			if err := r.List(ctx, &pods, client.InNamespace(s.Namespace), client.MatchingLabels{batchv1.JobNameLabel: job.Name}, client.UnsafeDisableDeepCopy); err != nil {
				return nil, nil, fmt.Errorf("list pods of job %s: %w", job.Name, err)
			}
			j.result = jobOutcome(job, pods.Items)
		}
		jobs[digest] = j
	}
	return jobs, foreign, nil
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
		if due, _ := needsScan(scannedAt, found, o.now, o.rescanInterval); due {
			j.result = jobResult{phase: jobFailed, finishedAt: j.result.finishedAt, reason: crowsnestv1alpha1.FailureReportMissing,
				message: "the scan Job succeeded, but results-api has no current report for the digest: check the operator's --uploader-api-url (the URL scan Pods upload to) and the results-api logs"}
		}
	}
}
