package controller

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"

	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
	"github.com/crowsnest-dev/crowsnest/operator/internal/discovery"
	"github.com/crowsnest-dev/crowsnest/operator/internal/publish"
	"github.com/crowsnest-dev/crowsnest/operator/internal/scanjob"
)

// Lookup answers which digests have a report (resultsclient.Client).
type Lookup interface {
	Lookup(ctx context.Context, want map[string]time.Time) (map[string]time.Time, error)
}

// Options are the operator-wide settings the reconciler applies.
type Options struct {
	GrypeImage     string
	UploaderImage  string
	UploaderAPIURL string // results-api URL as seen from scan Pods
	ServiceAccount string
	JobTTL         time.Duration
	RetryBase      time.Duration // first wait after a failed scan
	RetryMax       time.Duration
	LookupRetry    time.Duration // first wait after a failed lookup; doubles to 5m
	PublishRetry   time.Duration // wait before retrying undelivered events
}

// ScannerReconciler reconciles Scanners.
type ScannerReconciler struct {
	client.Client
	// APIReader reads Jobs straight from the API server: the concurrency cap
	// must count a Job created a moment ago, which the cache may not show yet.
	APIReader client.Reader
	Recorder  events.EventRecorder
	Lookup    Lookup
	Publisher publish.Publisher
	Options   Options
	Now       func() time.Time
	// Rescans, when set, are extra reconcile triggers (DeletedReports.Events).
	Rescans <-chan event.GenericEvent

	mu             sync.Mutex
	lookupFailures map[types.NamespacedName]int
}

// +kubebuilder:rbac:groups=crowsnest.dev,resources=scanners,verbs=get;list;watch
// +kubebuilder:rbac:groups=crowsnest.dev,resources=scanners/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=crowsnest.dev,resources=scanners/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=create;get;list;watch;delete;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile observes, decides, acts, and patches the status once.
func (r *ScannerReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	logger := log.FromContext(ctx)
	var s crowsnestv1alpha1.Scanner
	if err := r.Get(ctx, req.NamespacedName, &s); err != nil {
		if apierrors.IsNotFound(err) {
			r.lookupFailed(req.NamespacedName, false)
			deleteGauges(req.Namespace, req.Name)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("get scanner: %w", err)
	}
	if !s.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // its Jobs go with it through owner references
	}
	before := s.DeepCopy()

	obs, err := r.observe(ctx, &s)
	if err != nil {
		return ctrl.Result{}, err
	}
	p := decide(obs.observed)
	out := outcome{plan: p, lookupErr: obs.lookupErr}
	out.eventsErr, err = r.act(ctx, &s, obs, &p)
	if err != nil {
		return ctrl.Result{}, err
	}
	out.plan = p

	setStatus(&s, out)
	setGauges(&s)
	if !equality.Semantic.DeepEqual(before.Status, s.Status) {
		// An update, not a merge patch: a merge patch leaves out counts
		// that are zero, and the counts are required fields.
		if err := r.Status().Update(ctx, &s); err != nil {
			return ctrl.Result{}, fmt.Errorf("update scanner status: %w", err)
		}
	}

	res := ctrl.Result{RequeueAfter: p.requeueAfter}
	why := "scheduled"
	if obs.lookupErr != nil {
		n := r.lookupFailed(req.NamespacedName, true)
		res.RequeueAfter, why = backoff{base: r.Options.LookupRetry, max: 5 * time.Minute}.delay(n), "lookup"
		logger.Info("results-api lookup failed; no scan Jobs created", "error", obs.lookupErr.Error(), "retryIn", res.RequeueAfter)
	} else {
		r.lookupFailed(req.NamespacedName, false)
	}
	if out.eventsErr != nil && (res.RequeueAfter == 0 || r.Options.PublishRetry < res.RequeueAfter) {
		res.RequeueAfter, why = r.Options.PublishRetry, "events"
		logger.Info("events not delivered; retrying", "error", out.eventsErr.Error(), "retryIn", res.RequeueAfter)
	}
	if res.RequeueAfter > 0 {
		timedRequeues.WithLabelValues(why).Inc()
	}
	return res, nil
}

// lookupFailed counts consecutive lookup failures of a Scanner (failed) or
// resets the count; it returns the count.
func (r *ScannerReconciler) lookupFailed(key types.NamespacedName, failed bool) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lookupFailures == nil {
		r.lookupFailures = map[types.NamespacedName]int{}
	}
	if !failed {
		delete(r.lookupFailures, key)
		return 0
	}
	r.lookupFailures[key]++
	return r.lookupFailures[key]
}

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

func setGauges(s *crowsnestv1alpha1.Scanner) {
	digestsSeen.WithLabelValues(s.Namespace, s.Name).Set(float64(s.Status.Images))
	scansQueued.WithLabelValues(s.Namespace, s.Name).Set(float64(s.Status.Queued))
	scansActive.WithLabelValues(s.Namespace, s.Name).Set(float64(s.Status.Scanning))
}

func deleteGauges(namespace, name string) {
	digestsSeen.DeleteLabelValues(namespace, name)
	scansQueued.DeleteLabelValues(namespace, name)
	scansActive.DeleteLabelValues(namespace, name)
}
