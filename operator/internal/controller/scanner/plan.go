package scanner

import (
	"sort"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
	"github.com/crowsnest-dev/crowsnest/operator/internal/discovery"
)

// scanJob is one existing scan Job of the Scanner, as observed.
type scanJob struct {
	job     *batchv1.Job
	digest  string
	image   string
	attempt int
	reason  string
	result  jobResult
	// unconfirmed: the Job succeeded, but whether its report arrived is not
	// known yet (the lookup failed), so its outcome is not recorded.
	unconfirmed bool
}

// observed is everything a decision depends on.
type observed struct {
	now            time.Time
	namespace      string // the Scanner's
	inventory      discovery.Inventory
	jobs           map[string]*scanJob  // by digest
	elsewhere      map[string]*scanJob  // by digest: another Scanner's Job for it (its active one, else its oldest)
	claimed        map[string]bool      // digests whose Job this Scanner created and the cache does not show yet
	reports        map[string]time.Time // scannedAt by digest; nil when the lookup failed
	rescanInterval time.Duration
	jitter         float64 // spread rescans: each digest's interval moves by up to ±jitter of it
	maxConcurrent  int
	backoff        backoff
	// recorded are the failures the Scanner's status lists, by digest: the
	// memory of a failed attempt whose Job is gone before its retry could
	// take the name (the TTL controller's foreground deletion waits for the
	// Job's Pods, so the replacement is refused until they are gone).
	recorded map[string]crowsnestv1alpha1.ScanFailure
}

// scanRequest is a Job to create.
type scanRequest struct {
	digest  string
	target  *discovery.Target
	attempt int
	reason  eventsv1.NeedReason
	replace *scanJob                       // a failed Job of the same name, deleted first
	failure *crowsnestv1alpha1.ScanFailure // the failure a retry follows
}

// plan is what a reconcile does, and the counts it reports.
type plan struct {
	create       []scanRequest
	retire       []*scanJob // finished Jobs to delete
	images       int
	scanned      int
	queued       int
	scanning     int
	failed       int
	notPullable  int // of failed: images that cannot be pulled at all
	failures     []crowsnestv1alpha1.ScanFailure
	lastScan     time.Time
	requeueAfter time.Duration // 0: nothing timed to wait for
}

// decide is the pure heart of the reconciler: what each digest needs, then
// which of those needs fit under the concurrency cap.
func decide(o observed) plan {
	needs := classify(o)
	running := 0
	for _, n := range needs {
		if n.active && !n.elsewhere {
			running++
		}
	}
	return allocate(needs, max(o.maxConcurrent-running, 0))
}

// allocate turns needs into a plan: it counts them, gives the free slots
// to the wanted scans (never-scanned images first, then retries, then
// rescans), queues the rest, and bounds the listed failures.
func allocate(needs []need, slots int) plan {
	var p plan
	var candidates []scanRequest
	for _, n := range needs {
		if n.image {
			p.images++
		}
		if n.scanned {
			p.scanned++
		}
		if n.active {
			p.scanning++
		}
		if n.queued {
			p.queued++
		}
		if n.failure != nil {
			p.failed++
			p.failures = append(p.failures, *n.failure)
			if n.failure.Reason == crowsnestv1alpha1.FailureNotPullable {
				p.notPullable++
			}
		}
		if n.retire != nil {
			p.retire = append(p.retire, n.retire)
		}
		if n.scan != nil {
			candidates = append(candidates, *n.scan)
		}
		if n.wakeIn > 0 && (p.requeueAfter == 0 || n.wakeIn < p.requeueAfter) {
			p.requeueAfter = n.wakeIn
		}
		if n.scannedAt.After(p.lastScan) {
			p.lastScan = n.scannedAt
		}
	}

	sort.SliceStable(candidates, func(a, b int) bool { return reasonRank(candidates[a].reason) < reasonRank(candidates[b].reason) })
	slots = max(slots, 0)
	if len(candidates) > slots {
		p.queued += len(candidates) - slots
		candidates = candidates[:slots]
	}
	p.create = candidates
	p.scanning += len(candidates)
	for _, c := range candidates {
		if c.reason == eventsv1.NeedRetry {
			p.failed-- // it is scanning again
			p.failures = dropFailure(p.failures, c.digest)
		}
	}
	p.boundFailures()
	return p
}

// unplan takes back a planned Job that may not start yet: it waits
// (queued), or a retry stays failed.
func (p *plan) unplan(req scanRequest) {
	p.scanning--
	if req.reason == eventsv1.NeedRetry && req.failure != nil {
		p.keepFailed(*req.failure)
		return
	}
	p.queued++
}

// keepFailed counts a retry that could not start after all as failed again.
func (p *plan) keepFailed(f crowsnestv1alpha1.ScanFailure) {
	p.failed++
	p.failures = append(p.failures, f)
	p.boundFailures()
}

// boundFailures orders the listed failures, soonest retry first, and keeps
// the first MaxRecentFailures.
func (p *plan) boundFailures() {
	sort.SliceStable(p.failures, func(a, b int) bool { return earlier(p.failures[a].NextRetry, p.failures[b].NextRetry) })
	if len(p.failures) > crowsnestv1alpha1.MaxRecentFailures {
		p.failures = p.failures[:crowsnestv1alpha1.MaxRecentFailures]
	}
}

func failure(j *scanJob, next *time.Time) *crowsnestv1alpha1.ScanFailure {
	f := &crowsnestv1alpha1.ScanFailure{Digest: j.digest, Image: j.image, Reason: j.result.reason, Message: clip(j.result.message, 256), Attempt: int32(j.attempt)}
	if next != nil {
		f.NextRetry = &metav1.Time{Time: next.UTC().Truncate(time.Second)}
	}
	return f
}

func dropFailure(fs []crowsnestv1alpha1.ScanFailure, digest string) []crowsnestv1alpha1.ScanFailure {
	out := fs[:0]
	for _, f := range fs {
		if f.Digest != digest {
			out = append(out, f)
		}
	}
	return out
}

// earlier orders failures with a retry time first, soonest first.
func earlier(a, b *metav1.Time) bool {
	if a == nil || b == nil {
		return a != nil && b == nil
	}
	return a.Before(b)
}

// reasonRank puts never-scanned images before retries before rescans.
func reasonRank(r eventsv1.NeedReason) int {
	switch r {
	case eventsv1.NeedNew:
		return 0
	case eventsv1.NeedRetry:
		return 1
	}
	return 2
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
