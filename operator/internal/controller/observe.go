package controller

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
	"github.com/crowsnest-dev/crowsnest/operator/internal/discovery"
	"github.com/crowsnest-dev/crowsnest/operator/internal/scanjob"
)

// observation is a reconcile's view of the world.
type observation struct {
	observed
	lookupErr error
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
	jobs, err := r.observeJobs(ctx, s)
	if err != nil {
		return observation{}, err
	}
	want := make(map[string]time.Time, len(inv.Targets))
	for d := range inv.Targets {
		switch j := jobs[d]; {
		case j != nil && j.result.phase == jobSucceeded:
			// Decides whether to retire the Job: only a fresh answer will do
			// (condition times have one-second resolution).
			want[d] = now
		case j != nil && j.result.phase == jobFailed:
			want[d] = j.result.finishedAt.Add(time.Second)
		default:
			want[d] = time.Time{}
		}
	}
	obs := observation{observed: observed{
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
	return obs, nil
}

func (r *ScannerReconciler) observeJobs(ctx context.Context, s *crowsnestv1alpha1.Scanner) (map[string]*scanJob, error) {
	var list batchv1.JobList
	if err := r.APIReader.List(ctx, &list, client.InNamespace(s.Namespace), client.MatchingLabels(scanjob.SelectorLabels(s.Name))); err != nil {
		return nil, fmt.Errorf("list scan jobs: %w", err)
	}
	jobs := make(map[string]*scanJob, len(list.Items))
	for i := range list.Items {
		job := &list.Items[i]
		digest := job.Annotations[scanjob.AnnotationDigest]
		if discovery.ValidDigest(digest) != nil || !job.DeletionTimestamp.IsZero() || jobs[digest] != nil {
			continue
		}
		attempt, _ := strconv.Atoi(job.Annotations[scanjob.AnnotationAttempt])
		j := &scanJob{job: job, digest: digest, image: job.Annotations[scanjob.AnnotationImage], attempt: max(attempt, 1),
			reason: job.Annotations[scanjob.AnnotationReason], result: jobOutcome(job, nil)}
		if j.result.phase == jobFailed {
			if recorded := job.Annotations[scanjob.AnnotationFailure]; recorded != "" {
				j.result.reason, j.result.message, _ = strings.Cut(recorded, ": ")
			} else {
				var pods corev1.PodList
				if err := r.List(ctx, &pods, client.InNamespace(s.Namespace), client.MatchingLabels{batchv1.JobNameLabel: job.Name}, client.UnsafeDisableDeepCopy); err != nil {
					return nil, fmt.Errorf("list pods of job %s: %w", job.Name, err)
				}
				j.result = jobOutcome(job, pods.Items)
			}
		}
		jobs[digest] = j
	}
	return jobs, nil
}
