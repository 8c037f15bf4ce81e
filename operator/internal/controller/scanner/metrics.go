package scanner

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
)

// The manager's metrics endpoint (cmd, --metrics-secure) authenticates each
// scrape with a TokenReview and authorizes it with a SubjectAccessReview:
// cluster-scoped rules, needed in every install.
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// Metrics, registered with controller-runtime's registry so they are served
// next to its own on the manager's metrics endpoint. No label is called
// namespace: Prometheus (honor_labels false) would rename it to
// exported_namespace, since the scrape target has its own namespace label.
var (
	digestsSeen = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "crowsnest_operator_digests_seen", Help: "Distinct image digests running in a Scanner's namespace.",
	}, []string{"scanner_namespace", "scanner"})
	scansQueued = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "crowsnest_operator_scans_queued", Help: "Digests waiting for a scan Job.",
	}, []string{"scanner_namespace", "scanner"})
	scansActive = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "crowsnest_operator_scans_active", Help: "Scan Jobs running.",
	}, []string{"scanner_namespace", "scanner"})
	jobsCreated = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "crowsnest_operator_jobs_created_total", Help: "Scan Jobs created.",
	})
	scansFinished = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "crowsnest_operator_scans_finished_total", Help: "Scan Jobs finished, by outcome and failure reason.",
	}, []string{"outcome", "reason"})
	lookupDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "crowsnest_operator_lookup_duration_seconds", Help: "Duration of results-api batch lookups.",
		Buckets: prometheus.ExponentialBuckets(0.001, 4, 8),
	}, []string{"result"})
	eventsPublished = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "crowsnest_operator_events_published_total", Help: "Events acknowledged by JetStream.",
	}, []string{"subject"})
	eventsFailed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "crowsnest_operator_events_failed_total", Help: "Event publishes that failed (retried later).",
	}, []string{"subject"})
	timedRequeues = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "crowsnest_operator_timed_requeues_total", Help: "Reconciles that asked to run again after a delay, by why.",
	}, []string{"why"})
	scannerListErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "crowsnest_operator_scanner_list_errors_total",
		Help: "Failed lists of a namespace's Scanners, made to reconcile them after a workload Pod (watch=pods) or another Scanner's scan Job (watch=jobs) changed; each is retried with backoff.",
	}, []string{"watch"})
	scannerWakeups = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "crowsnest_operator_scanner_wakeups_total",
		Help: "Requests to reconcile a Scanner, by source: spec, own_job, peer_job, peer_job_failed, pods, budget, report_deleted, stuck (timed requeues are in timed_requeues_total). Counted before the work queue merges the requests pending for the same Scanner.",
	}, []string{"source"})
	notPermittedTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "crowsnest_operator_namespace_not_permitted_total",
		Help: "Scanners found in a namespace the operator may not scan (once per verdict, not per reconcile).",
	})
)

func init() {
	metrics.Registry.MustRegister(digestsSeen, scansQueued, scansActive, jobsCreated, scansFinished,
		lookupDuration, eventsPublished, eventsFailed, timedRequeues, scannerListErrors, notPermittedTotal, scannerWakeups)
}

// ObserveLookup records one results-api batch lookup; it is the results
// client's Options.Observe.
func ObserveLookup(d time.Duration, err error) {
	result := "ok"
	if err != nil {
		result = "error"
	}
	lookupDuration.WithLabelValues(result).Observe(d.Seconds())
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

// The sources of scannerWakeups.
const (
	wakeupSpec          = "spec"            // its spec or requested-at annotation
	wakeupOwnJob        = "own_job"         // its own Job ended or went (ownJobChanged)
	wakeupPeerJob       = "peer_job"        // another Scanner's Job for one of its digests (peers.go)
	wakeupPeerFailed    = "peer_job_failed" // such a Job's failure was recorded
	wakeupPods          = "pods"            // a workload Pod of its namespace changed
	wakeupBudget        = "budget"          // the cluster-wide cap gave it a slot
	wakeupReportDeleted = "report_deleted"  // a report of one of its digests was deleted
	wakeupStuck         = "stuck"           // a stuck check fell due on a running Job
)

// counted is p, counting in scannerWakeups what it lets through.
func counted(source string, p predicate.Predicate) predicate.Predicate {
	c := func(ok bool) bool {
		if ok {
			scannerWakeups.WithLabelValues(source).Inc()
		}
		return ok
	}
	return predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return c(p.Create(e)) },
		UpdateFunc:  func(e event.UpdateEvent) bool { return c(p.Update(e)) },
		DeleteFunc:  func(e event.DeleteEvent) bool { return c(p.Delete(e)) },
		GenericFunc: func(e event.GenericEvent) bool { return c(p.Generic(e)) },
	}
}

// countedMap is fn, counting the requests it returns in scannerWakeups.
func countedMap(source string, fn handler.MapFunc) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		reqs := fn(ctx, obj)
		scannerWakeups.WithLabelValues(source).Add(float64(len(reqs)))
		return reqs
	}
}
