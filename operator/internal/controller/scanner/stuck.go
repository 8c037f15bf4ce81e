package scanner

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	k8seventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
	"github.com/crowsnest-dev/crowsnest/operator/internal/scanjob"
)

// A scan Job can hang without ever failing: its Pod waits on an image the
// kubelet cannot pull, or the API server refuses to create its Pod at all
// (ResourceQuota, LimitRange, an admission webhook or policy) and the Job
// controller keeps trying. Either would end only at the scan timeout, as
// DeadlineExceeded. After Options.StuckGrace the operator ends such a Job
// instead and says why. A kubelet pull failure is always one of the scan
// Pod's own images (Grype, uploader, docker-config), never the scanned one,
// which Grype fetches itself over the registry API (see waitingFailures).

// The Job controller's Event on a Job whose Pod the API server refused.
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=list

const (
	reasonFailedCreate = "FailedCreate" // the Job controller's Event reason
	maxJobEvents       = 100
)

// stuckReason tells whether an active Job's Pod is stuck: a container
// (init or regular) waits for one of the waitingFailures reasons and has been
// waiting for at least grace. How long it has waited is counted from when
// it could first start: for the first init container when the kubelet took
// the Pod (status.startTime, before any pull; the Pod's creation when that
// is not known), the previous init container's end for the others, the last
// init container's end for the regular ones (the kubelet pulls a
// container's image only when its turn comes). Pods other than the Job's own
// are ignored. It is pure.
func stuckReason(job *batchv1.Job, pods []corev1.Pod, now time.Time, grace time.Duration) (reason, message string, since time.Time, ok bool) {
	if !jobRunning(job) {
		return "", "", time.Time{}, false
	}
	own := ownPods(job, pods)
	for i := range own {
		w := stuckContainer(&own[i])
		if w.reason == "" || now.Sub(w.since) < grace {
			continue
		}
		return waitingFailures[w.reason], fmt.Sprintf("container %s (image %s) has been waiting since %s: %s: %s",
			w.container, w.image, w.since.UTC().Format(time.RFC3339), w.reason, w.message), w.since, true
	}
	return "", "", time.Time{}, false
}

// rejectedReason tells whether an active Job without Pods, at least grace
// old, had its Pod refused by the API server: the Job controller then
// records a FailedCreate Event on the Job with the API server's message
// (recent Kubernetes sets no Job condition for it). events are the
// namespace's Events about the Job; the newest FailedCreate of this Job
// (by UID: a retry's Job has the same name) gives the message. It is pure.
func rejectedReason(job *batchv1.Job, pods []corev1.Pod, events []k8seventsv1.Event, now time.Time, grace time.Duration) (reason, message string, since time.Time, ok bool) {
	if !jobRunning(job) || len(ownPods(job, pods)) > 0 || now.Sub(job.CreationTimestamp.Time) < grace {
		return "", "", time.Time{}, false
	}
	var newest *k8seventsv1.Event
	var first time.Time
	for i := range events {
		e := &events[i]
		if e.Reason != reasonFailedCreate || e.Regarding.UID != job.UID || e.Regarding.Kind != "Job" {
			continue
		}
		if t := eventTime(e); first.IsZero() || t.Before(first) {
			first = t
		}
		if newest == nil || eventTime(e).After(eventTime(newest)) {
			newest = e
		}
	}
	if newest == nil {
		return "", "", time.Time{}, false
	}
	return crowsnestv1alpha1.FailurePodRejected, newest.Note, first, true
}

// stuckCheckAfter says when a Job that is not stuck yet would be, so the
// reconcile can requeue for it: no watch event marks the end of a grace
// period, and none comes for an Event on a Job. Only a Job with a container
// in a stuck state, or without Pods, asks for a check; ok is false for
// every other Job. It is pure.
func stuckCheckAfter(job *batchv1.Job, pods []corev1.Pod, now time.Time, grace time.Duration) (after time.Duration, ok bool) {
	if !jobRunning(job) || grace <= 0 {
		return 0, false
	}
	var since, pending time.Time
	if own := ownPods(job, pods); len(own) == 0 {
		since = job.CreationTimestamp.Time
	} else {
		for i := range own {
			if w := stuckContainer(&own[i]); w.reason != "" && (since.IsZero() || w.since.Before(since)) {
				since = w.since
			}
			if p := &own[i]; p.Status.Phase == corev1.PodPending && p.DeletionTimestamp == nil && (pending.IsZero() || p.CreationTimestamp.Time.Before(pending)) {
				pending = p.CreationTimestamp.Time
			}
		}
		if since.IsZero() {
			if pending.IsZero() {
				return 0, false
			}
			// A Pending Pod may start waiting on a pull at any moment, and
			// nothing the reconcile watches changes when it does (the Job's
			// status stays active, not ready): a real kubelet's
			// ErrImagePull arrives after the last Job event. Look again when
			// its grace would run out, and every grace after that.
			d := pending.Add(grace).Sub(now)
			if d <= 0 {
				d = grace
			}
			return d + time.Second, true
		}
	}
	// A second past the grace: condition and creation times are whole seconds.
	return max(since.Add(grace).Sub(now), 0) + time.Second, true
}

// waitsStuck tells whether a scan Pod has a container waiting for a
// waitingFailures reason: a Pod watch that ignores scan Pods' progress
// should still let through an update where this turns true, so the
// reconcile can schedule the check (stuckCheckAfter).
func waitsStuck(pod *corev1.Pod) bool { return stuckContainer(pod).reason != "" }

// waitingContainer is a container waiting for a waitingFailures reason.
type waitingContainer struct {
	container, image, reason, message string
	since                             time.Time
}

// stuckContainer finds the first container of a running Pod that waits for
// a waitingFailures reason.
func stuckContainer(pod *corev1.Pod) waitingContainer {
	if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return waitingContainer{}
	}
	start := pod.CreationTimestamp.Time
	if t := pod.Status.StartTime; t != nil && t.After(start) {
		start = t.Time
	}
	for _, cs := range pod.Status.InitContainerStatuses {
		if w := waitingFor(cs, start); w.reason != "" {
			return w
		}
		if t := cs.State.Terminated; t != nil && t.FinishedAt.After(start) {
			start = t.FinishedAt.Time
		}
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if w := waitingFor(cs, start); w.reason != "" {
			return w
		}
	}
	return waitingContainer{}
}

func waitingFor(cs corev1.ContainerStatus, since time.Time) waitingContainer {
	w := cs.State.Waiting
	if w == nil || waitingFailures[w.Reason] == "" {
		return waitingContainer{}
	}
	return waitingContainer{container: cs.Name, image: cs.Image, reason: w.Reason, message: w.Message, since: since}
}

// jobRunning: active, not finished, not being deleted, outcome not recorded.
func jobRunning(job *batchv1.Job) bool {
	return jobOutcome(job, nil).phase == jobActive && job.Annotations[scanjob.AnnotationOutcome] == ""
}

// ownPods are the Pods the Job controls: a Job's retry has the same name,
// and its predecessor's Pods may linger.
func ownPods(job *batchv1.Job, pods []corev1.Pod) []corev1.Pod {
	var out []corev1.Pod
	for _, p := range pods {
		for _, o := range p.OwnerReferences {
			if o.UID == job.UID && o.Controller != nil && *o.Controller {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

func eventTime(e *k8seventsv1.Event) time.Time {
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.DeprecatedLastTimestamp.IsZero():
		return e.DeprecatedLastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

// endStuck ends j if it is stuck (stuckReason) or its Pod was refused
// (rejectedReason; only then are the Job's Events read, straight from the
// API server). It records the failure the way a finished Job's is recorded
// (recordOutcome: the outcome and failure annotations, a ScanFailed Event,
// the metric) and then lowers the Job's activeDeadlineSeconds to its age, so
// the Job controller fails it and deletes its Pod; the retry with backoff
// follows as for any failed scan. j.result becomes the failure. It reports
// whether j was ended, now or by an earlier call whose deadline update did
// not get through (that update is retried). pods are the Job's Pods (those
// of other Jobs are ignored); with Options.StuckGrace 0 nothing is ended.
func (r *Reconciler) endStuck(ctx context.Context, s *crowsnestv1alpha1.Scanner, j *scanJob, pods []corev1.Pod) (bool, error) {
	grace := r.Options.StuckGrace
	job := j.job
	if grace <= 0 || jobOutcome(job, nil).phase != jobActive {
		return false, nil
	}
	now := r.Now()
	if recorded := job.Annotations[scanjob.AnnotationFailure]; job.Annotations[scanjob.AnnotationOutcome] != "" {
		if recorded == "" {
			return false, nil // ReportMissing and the like: not this code's
		}
		// Ended before, but the deadline update failed: finish the job.
		j.result = failedResult(recorded, now)
		return true, r.stopJob(ctx, job, now)
	}
	reason, message, since, ok := stuckReason(job, pods, now, grace)
	own := ownPods(job, pods)
	if !ok && len(own) == 0 && now.Sub(job.CreationTimestamp.Time) >= grace {
		events, err := r.jobEvents(ctx, job)
		if err != nil {
			return false, err
		}
		reason, message, since, ok = rejectedReason(job, own, events, now, grace)
	}
	if !ok {
		return false, nil
	}
	log.FromContext(ctx).Info("ending stuck scan job", "job", job.Name, "digest", j.digest, "reason", reason, "since", since)
	j.result = jobResult{phase: jobFailed, finishedAt: now, reason: reason, message: message}
	if err := r.recordOutcome(ctx, s, j); err != nil {
		return false, err
	}
	return true, r.stopJob(ctx, job, now)
}

func failedResult(recorded string, now time.Time) jobResult {
	r := jobResult{phase: jobFailed, finishedAt: now}
	r.reason, r.message, _ = strings.Cut(recorded, ": ")
	return r
}

// stopJob sets the Job's activeDeadlineSeconds to its age (the field is
// mutable), which makes the Job controller fail it as DeadlineExceeded at
// once; the recorded failure wins over that condition (observeJobs).
func (r *Reconciler) stopJob(ctx context.Context, job *batchv1.Job, now time.Time) error {
	age := int64(now.Sub(startTime(job)).Seconds())
	deadline := max(age, 1)
	if d := job.Spec.ActiveDeadlineSeconds; d != nil && *d <= deadline {
		return nil
	}
	before := job.DeepCopy()
	job.Spec.ActiveDeadlineSeconds = &deadline
	if err := client.IgnoreNotFound(r.Patch(ctx, job, client.MergeFrom(before))); err != nil {
		return fmt.Errorf("end stuck scan job %s: %w", job.Name, err)
	}
	return nil
}

// jobEvents lists the Events about a Job from the API server (Events are
// not cached: the operator would hold every Event of the cluster).
func (r *Reconciler) jobEvents(ctx context.Context, job *batchv1.Job) ([]k8seventsv1.Event, error) {
	var list k8seventsv1.EventList
	sel := fields.AndSelectors(
		fields.OneTermEqualSelector("regarding.name", job.Name),
		fields.OneTermEqualSelector("regarding.uid", string(job.UID)),
	)
	if err := r.APIReader.List(ctx, &list, client.InNamespace(job.Namespace),
		client.MatchingFieldsSelector{Selector: sel}, client.Limit(maxJobEvents)); err != nil {
		if apierrors.IsForbidden(err) {
			// Without the events list permission the rejection cannot be
			// explained: the Job then ends at its deadline, as before.
			return nil, nil
		}
		return nil, fmt.Errorf("list events of scan job %s: %w", job.Name, err)
	}
	return list.Items, nil
}

// endStuckJobs ends the running Jobs whose Pod is stuck (or that cannot
// create one) past the grace period, and times a check of each one still
// waiting for when its grace runs out (stuckChecks): a stuck Pod changes
// nothing the watches see.
func (r *Reconciler) endStuckJobs(ctx context.Context, s *crowsnestv1alpha1.Scanner, jobs []*scanJob) error {
	if r.Options.StuckGrace <= 0 {
		return nil
	}
	for _, j := range jobs {
		if j.result.phase != jobActive {
			continue
		}
		var pods corev1.PodList
		if err := r.List(ctx, &pods, client.InNamespace(j.job.Namespace), client.MatchingLabels{batchv1.JobNameLabel: j.job.Name}, client.UnsafeDisableDeepCopy); err != nil {
			return fmt.Errorf("list pods of job %s: %w", j.job.Name, err)
		}
		if _, err := r.endStuck(ctx, s, j, pods.Items); err != nil {
			return err
		}
		if after, ok := stuckCheckAfter(j.job, pods.Items, r.Now(), r.Options.StuckGrace); ok {
			r.stuckChecks.after(client.ObjectKeyFromObject(j.job), after)
		}
	}
	return nil
}
