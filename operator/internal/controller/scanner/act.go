package scanner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
	"github.com/crowsnest-dev/crowsnest/operator/internal/scanbudget"
	"github.com/crowsnest-dev/crowsnest/operator/internal/scanjob"
)

// Kubernetes Event reasons on a Scanner.
const (
	EventJobCreated    = "ScanJobCreated"
	EventScanSucceeded = "ScanSucceeded"
	EventScanFailed    = "ScanFailed"
)

const (
	publishedNeeded = "needed"
	publishedDone   = "done"
)

// act lets go of other Scanners' Jobs, records finished Jobs, publishes
// pending events, retires finished Jobs and creates new ones, in that order.
// An undelivered event does not stop scanning: it is returned as eventsErr
// and retried on the next reconcile, and the Job it belongs to is kept (its
// finalizer too) until it is delivered. p is updated when a planned Job
// could not be created.
func (r *Reconciler) act(ctx context.Context, s *crowsnestv1alpha1.Scanner, obs observation, p *plan) (eventsErr error, err error) {
	for _, job := range obs.foreign {
		if err := r.release(ctx, job); err != nil {
			return nil, err
		}
	}
	jobs := make([]*scanJob, 0, len(obs.jobs))
	for _, j := range obs.jobs {
		jobs = append(jobs, j)
	}
	sort.Slice(jobs, func(a, b int) bool {
		ta, tb := jobs[a].job.CreationTimestamp, jobs[b].job.CreationTimestamp
		return ta.Before(&tb) || (ta.Equal(&tb) && jobs[a].job.Name < jobs[b].job.Name)
	})
	if err := r.endStuckJobs(ctx, s, jobs); err != nil {
		return nil, err
	}
	for _, j := range jobs {
		if err := r.recordOutcome(ctx, s, j); err != nil {
			return nil, err
		}
	}
	for _, j := range jobs {
		if eventsErr != nil {
			break // keep each Job's events in order: needed before done
		}
		eventsErr = r.publishPending(ctx, s, j, obs)
	}
	for _, j := range p.retire {
		if !r.delivered(j) {
			continue // keep it until its job.done is delivered
		}
		if err := r.removeJob(ctx, j, goneUnwatched(obs.observed, j.digest)); err != nil {
			return nil, err
		}
	}
	r.admit(ctx, client.ObjectKeyFromObject(s), p)
	created := p.create[:0]
	for _, req := range p.create {
		job, err := r.createJob(ctx, s, req)
		if err != nil {
			return nil, err
		}
		if job == nil {
			p.scanning--
			if req.failure != nil {
				// A retry that cannot start yet (the failed Job's job.done
				// is not out, or its name is still taken while it is
				// deleted) stays failed: the status keeps its attempt.
				p.keepFailed(*req.failure)
			} else {
				p.queued++
			}
			continue
		}
		created = append(created, req)
		if r.Options.StuckGrace > 0 {
			// A Job without a Pod after the grace may have had it refused
			// (stuck.go); its Scanner is not reconciled for its creation.
			r.stuckChecks.after(client.ObjectKeyFromObject(job), r.Options.StuckGrace+time.Second)
		}
		if eventsErr == nil {
			eventsErr = r.publishPending(ctx, s, &scanJob{job: job, digest: req.digest, image: req.target.Image.Ref(), attempt: req.attempt, reason: string(req.reason)}, obs)
		}
	}
	p.create = created
	return eventsErr, nil
}

// delivered tells whether a finished Job's events are all out: its job.done
// was published, or events are off.
func (r *Reconciler) delivered(j *scanJob) bool {
	return !r.Publisher.Enabled() || j.job.Annotations[scanjob.AnnotationPublished] == publishedDone
}

// recordOutcome emits the Event and metric of a finished Job once, and keeps
// the failure reason on the Job so that it survives its Pods.
func (r *Reconciler) recordOutcome(ctx context.Context, s *crowsnestv1alpha1.Scanner, j *scanJob) error {
	if j.result.phase == jobActive || j.unconfirmed || j.job.Annotations[scanjob.AnnotationOutcome] != "" {
		return nil
	}
	set := map[string]string{}
	if j.result.phase == jobSucceeded {
		set[scanjob.AnnotationOutcome] = string(eventsv1.OutcomeSucceeded)
		r.Recorder.Eventf(s, j.job, corev1.EventTypeNormal, EventScanSucceeded, "Scan", "scanned %s (attempt %d)", j.image, j.attempt)
		scansFinished.WithLabelValues(string(eventsv1.OutcomeSucceeded), "").Inc()
	} else {
		set[scanjob.AnnotationOutcome] = string(eventsv1.OutcomeFailed)
		set[scanjob.AnnotationFailure] = j.result.reason + ": " + clip(j.result.message, 512)
		r.Recorder.Eventf(s, j.job, corev1.EventTypeWarning, EventScanFailed, "Scan", "scan of %s failed (attempt %d): %s: %s", j.image, j.attempt, j.result.reason, clip(j.result.message, 256))
		scansFinished.WithLabelValues(string(eventsv1.OutcomeFailed), j.result.reason).Inc()
	}
	log.FromContext(ctx).Info("scan finished", "job", j.job.Name, "digest", j.digest, "outcome", set[scanjob.AnnotationOutcome], "reason", j.result.reason)
	return r.annotate(ctx, j.job, set)
}

// publishPending publishes image.needed, then job.done once the outcome is
// recorded, each at most once per Job (the Job's annotation says what was
// delivered; the Job UID makes the ids stable across operator restarts).
func (r *Reconciler) publishPending(ctx context.Context, s *crowsnestv1alpha1.Scanner, j *scanJob, obs observation) error {
	if !r.Publisher.Enabled() {
		return nil
	}
	state := j.job.Annotations[scanjob.AnnotationPublished]
	if state == "" {
		var pods []string
		if t := obs.inventory.Targets[j.digest]; t != nil {
			pods = t.Pods
		}
		payload := eventsv1.ImageNeeded{Digest: j.digest, Image: j.image, Namespace: s.Namespace, Scanner: s.Name,
			Job: j.job.Name, Pods: pods, Reason: eventsv1.NeedReason(j.reason), Attempt: j.attempt}
		if err := r.publish(ctx, eventsv1.TypeImageNeeded, j, j.job.CreationTimestamp.Time, payload); err != nil {
			return err
		}
		if err := r.annotate(ctx, j.job, map[string]string{scanjob.AnnotationPublished: publishedNeeded}); err != nil {
			return err
		}
		state = publishedNeeded
	}
	if state != publishedNeeded || j.job.Annotations[scanjob.AnnotationOutcome] == "" {
		return nil
	}
	payload := eventsv1.JobDone{Digest: j.digest, Image: j.image, Namespace: s.Namespace, Scanner: s.Name, Job: j.job.Name,
		Outcome: eventsv1.Outcome(j.job.Annotations[scanjob.AnnotationOutcome]), Attempt: j.attempt,
		DurationSeconds: j.result.finishedAt.Sub(startTime(j.job)).Seconds()}
	if payload.Outcome == eventsv1.OutcomeFailed {
		payload.Reason, payload.Message = j.result.reason, clip(j.result.message, 512)
	}
	if err := r.publish(ctx, eventsv1.TypeJobDone, j, j.result.finishedAt, payload); err != nil {
		return err
	}
	return r.annotate(ctx, j.job, map[string]string{scanjob.AnnotationPublished: publishedDone})
}

func (r *Reconciler) publish(ctx context.Context, typ string, j *scanJob, at time.Time, payload any) error {
	subject, _ := eventsv1.SubjectFor(typ)
	ev, err := eventsv1.New(eventsv1.SourceOperator, typ, eventsv1.ID(typ, string(j.job.UID)), j.digest, at.UTC(), payload)
	if err != nil {
		return err
	}
	if err := r.Publisher.Publish(ctx, ev); err != nil {
		eventsFailed.WithLabelValues(subject).Inc()
		return err
	}
	eventsPublished.WithLabelValues(subject).Inc()
	return nil
}

func startTime(job *batchv1.Job) time.Time {
	if job.Status.StartTime != nil {
		return job.Status.StartTime.Time
	}
	return job.CreationTimestamp.Time
}

// annotate sets annotations on job with a merge patch of them alone:
// written directly, it is what MergeFrom would send without encoding and
// diffing two copies of the Job (several per scan Job; ~5% of the
// operator's CPU at 100,000 Pods), and, like MergeFrom's, it carries
// nothing of the trimmed cache copy (TransformJob).
func (r *Reconciler) annotate(ctx context.Context, job *batchv1.Job, set map[string]string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": set}})
	if err != nil {
		return fmt.Errorf("annotate scan job %s: %w", job.Name, err)
	}
	if job.Annotations == nil {
		job.Annotations = map[string]string{}
	}
	for k, v := range set {
		job.Annotations[k] = v
	}
	// A Job deleted meanwhile (its TTL ran out, its Scanner went) has
	// nothing left to annotate.
	if err := client.IgnoreNotFound(r.Patch(ctx, job, client.RawPatch(types.MergePatchType, patch))); err != nil {
		return fmt.Errorf("annotate scan job %s: %w", job.Name, err)
	}
	return nil
}

// removeJob deletes a Job the operator is done with: it removes the
// finalizer, then deletes the Job unless it is being deleted already (the
// TTL controller got there first), which the finalizer's removal completes.
// unwatched says nothing waits for the Job to go (goneUnwatched): its
// deletion then does not reconcile the Scanner again (ownJobChanged).
func (r *Reconciler) removeJob(ctx context.Context, j *scanJob, unwatched bool) (err error) {
	if unwatched {
		r.retired.Store(j.job.UID, struct{}{})
		defer func() {
			if err != nil {
				r.retired.Delete(j.job.UID)
			}
		}()
	}
	if err := r.release(ctx, j.job); err != nil {
		return err
	}
	if !j.job.DeletionTimestamp.IsZero() {
		return nil
	}
	err = r.Delete(ctx, j.job, client.PropagationPolicy(metav1.DeletePropagationBackground), client.Preconditions{UID: &j.job.UID})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		r.retired.Delete(j.job.UID) // gone before, or not this Job
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete scan job %s: %w", j.job.Name, err)
	}
	return nil
}

// goneUnwatched tells whether nothing the Scanner decides waits for its
// Job of digest to go: the digest no longer runs in its namespace, or it
// has a current report. (A digest whose report was deleted waits for its
// finished Job to go before it is scanned again: need.queued.)
func goneUnwatched(o observed, digest string) bool {
	if o.reports == nil {
		return false
	}
	if o.inventory.Targets[digest] == nil {
		return true
	}
	at, found := o.reports[digest]
	due, _ := needsScan(at, found, o.now, o.interval(digest))
	return !due
}

// createJob creates the Job for req, first removing the failed Job it
// replaces once that one's job.done is delivered. It returns nil when the
// name is still taken (the old Job is being deleted, or its job.done is not
// delivered yet: the undelivered event makes the reconcile run again).
func (r *Reconciler) createJob(ctx context.Context, s *crowsnestv1alpha1.Scanner, req scanRequest) (*batchv1.Job, error) {
	// admit claimed the digest for this Scanner; the claim is released
	// unless the Job is created.
	owner := client.ObjectKeyFromObject(s)
	created := false
	defer func() {
		if !created {
			r.budget.Release(req.digest, owner)
		}
	}()
	if req.replace != nil {
		if !r.delivered(req.replace) {
			return nil, nil
		}
		if err := r.removeJob(ctx, req.replace, false); err != nil {
			return nil, err
		}
	}
	if other, err := r.runningElsewhere(ctx, s, req.digest); err != nil || other != "" {
		if other != "" {
			log.FromContext(ctx).V(1).Info("digest is being scanned by another scanner's job", "digest", req.digest, "job", other)
		}
		return nil, err
	}
	job := scanjob.Build(scanjob.Params{
		Scanner: s, Digest: req.digest, Image: req.target.Image.Ref(), PullSecrets: req.target.PullSecrets,
		Platform: r.platforms.of(ctx, req.target.Node),
		Attempt:  req.attempt, Reason: string(req.reason),
		GrypeImage: r.Options.GrypeImage, UploaderImage: r.Options.UploaderImage, APIURL: r.Options.UploaderAPIURL,
		VulnDBURL: r.Options.VulnDBURL, ServiceAccount: r.Options.ServiceAccount, TTL: r.Options.JobTTL,
		Scheduling: r.Options.ScanPod, InsecureRegistries: r.Options.InsecureRegistries,
	})
	if err := r.Create(ctx, job); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil, nil
		}
		if errors.Is(err, context.Canceled) {
			return nil, err
		}
		return nil, fmt.Errorf("create scan job %s for %s: %w", job.Name, req.digest, err)
	}
	created = true
	jobsCreated.Inc()
	r.Recorder.Eventf(s, job, corev1.EventTypeNormal, EventJobCreated, "Scan", "created Job %s to scan %s (%s, attempt %d)", job.Name, req.target.Image.Ref(), req.reason, req.attempt)
	log.FromContext(ctx).Info("scan job created", "job", job.Name, "digest", req.digest, "image", req.target.Image.Ref(), "reason", req.reason)
	return job, nil
}

// admit applies the cluster-wide limits to the plan's new Jobs: the
// cluster-wide rate of rescans, then the cluster-wide concurrency cap
// (scanbudget). What does not fit waits: a rescan until the rate allows it
// (a timed requeue), anything else until a slot frees (the budget wakes
// this Scanner then).
func (r *Reconciler) admit(ctx context.Context, owner types.NamespacedName, p *plan) {
	keep := make([]scanRequest, 0, len(p.create))
	var waiting []scanRequest
	for _, req := range p.create {
		if req.reason == eventsv1.NeedRescan {
			if d := r.budget.RescanDelay(); d > 0 {
				waiting = append(waiting, req)
				if p.requeueAfter == 0 || d < p.requeueAfter {
					p.requeueAfter = d
				}
				continue
			}
		}
		keep = append(keep, req)
	}
	want := make([]scanbudget.Request, len(keep))
	for i, req := range keep {
		want[i] = scanbudget.Request{Digest: req.digest, Job: types.NamespacedName{Namespace: owner.Namespace, Name: scanjob.JobName(owner.Name, req.digest)}}
	}
	admitted := map[string]bool{}
	for _, d := range r.budget.Admit(owner, want, func() map[string]types.NamespacedName { return r.runningJobs(ctx) }) {
		admitted[d] = true
	}
	p.create = make([]scanRequest, 0, len(admitted))
	for _, req := range keep {
		if admitted[req.digest] {
			p.create = append(p.create, req)
		} else {
			waiting = append(waiting, req)
		}
	}
	for _, req := range waiting {
		p.unplan(req)
	}
}

// runningElsewhere returns the name of another Scanner's running Job for
// digest, read from the cache after this Scanner claimed the digest: a Job
// whose claim was released before the claim was taken is in the cache.
func (r *Reconciler) runningElsewhere(ctx context.Context, s *crowsnestv1alpha1.Scanner, digest string) (string, error) {
	list, err := r.jobIndex.jobs(ctx, r, jobDigestField, digest, "", labels.SelectorFromSet(labels.Set{scanjob.LabelDigestHash: scanjob.DigestHash(digest)}))
	if err != nil {
		return "", fmt.Errorf("list scan jobs of %s: %w", digest, err)
	}
	for _, job := range list {
		if job.Annotations[scanjob.AnnotationDigest] != digest || (job.Namespace == s.Namespace && job.Labels[scanjob.LabelScanner] == s.Name) {
			continue
		}
		if readJob(job).result.phase == jobActive {
			return job.Namespace + "/" + job.Name, nil
		}
	}
	return "", nil
}

// runningJobs maps the digest of every running scan Job in the cache to the
// Scanner it runs for, reading the running ones alone (jobActiveField). The
// budget calls it under its lock, so that no claim is released between this
// read and the decision it feeds.
func (r *Reconciler) runningJobs(ctx context.Context) map[string]types.NamespacedName {
	running := map[string]types.NamespacedName{}
	list, err := r.jobIndex.jobs(ctx, r, jobActiveField, "true", "", scanJobLabel)
	if err != nil {
		return running // the cache does not fail a list of a cached kind
	}
	for _, job := range list {
		if readJob(job).result.phase == jobActive {
			running[job.Annotations[scanjob.AnnotationDigest]] = types.NamespacedName{Namespace: job.Namespace, Name: job.Labels[scanjob.LabelScanner]}
		}
	}
	return running
}
