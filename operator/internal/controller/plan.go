package controller

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
}

// observed is everything a decision depends on.
type observed struct {
	now            time.Time
	inventory      discovery.Inventory
	jobs           map[string]*scanJob  // by digest
	reports        map[string]time.Time // scannedAt by digest; nil when the lookup failed
	rescanInterval time.Duration
	maxConcurrent  int
	backoff        backoff
}

// scanRequest is a Job to create.
type scanRequest struct {
	digest  string
	target  *discovery.Target
	attempt int
	reason  eventsv1.NeedReason
	replace *scanJob // a failed Job of the same name, deleted first
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
	failures     []crowsnestv1alpha1.ScanFailure
	lastScan     time.Time
	requeueAfter time.Duration // 0: nothing timed to wait for
}

// needsScan says whether a digest needs a (re)scan given its report time.
func needsScan(scannedAt time.Time, found bool, now time.Time, rescan time.Duration) (bool, eventsv1.NeedReason) {
	if !found {
		return true, eventsv1.NeedNew
	}
	if rescan > 0 && !now.Before(scannedAt.Add(rescan)) {
		return true, eventsv1.NeedRescan
	}
	return false, ""
}

// decide is the pure heart of the reconciler.
func decide(o observed) plan {
	var p plan
	p.images = len(o.inventory.Targets) + len(o.inventory.NotPullable)
	lookupOK := o.reports != nil
	active := 0
	for _, j := range o.jobs {
		if j.result.phase == jobActive {
			active++
		}
	}
	p.scanning = active
	wake := func(at time.Time) {
		if d := at.Sub(o.now); d > 0 && (p.requeueAfter == 0 || d < p.requeueAfter) {
			p.requeueAfter = d
		}
	}

	var candidates []scanRequest
	for _, digest := range sortedKeys(o.inventory.Targets) {
		t := o.inventory.Targets[digest]
		scannedAt, found := o.reports[digest]
		if found && scannedAt.After(p.lastScan) {
			p.lastScan = scannedAt
		}
		need, why := needsScan(scannedAt, found, o.now, o.rescanInterval)
		if lookupOK && !need {
			p.scanned++
			if o.rescanInterval > 0 {
				wake(scannedAt.Add(o.rescanInterval))
			}
		}
		j := o.jobs[digest]
		switch {
		case j != nil && j.result.phase == jobActive:
			// counted in scanning
		case j != nil && j.result.phase == jobFailed && lookupOK && need:
			next := j.result.finishedAt.Add(o.backoff.delay(j.attempt))
			p.failed++
			p.failures = append(p.failures, failure(j, &next))
			if o.now.Before(next) {
				wake(next)
				continue
			}
			candidates = append(candidates, scanRequest{digest: digest, target: t, attempt: j.attempt + 1, reason: eventsv1.NeedRetry, replace: j})
		case j != nil && j.result.phase == jobFailed:
			if lookupOK {
				p.retire = append(p.retire, j) // a report exists after all
			} else {
				p.failed++
				p.failures = append(p.failures, failure(j, nil))
			}
		case j != nil: // succeeded
			if lookupOK {
				p.retire = append(p.retire, j)
			}
			if lookupOK && need {
				p.queued++ // the report did not arrive: scan again once the Job is gone
			}
		case lookupOK && need:
			candidates = append(candidates, scanRequest{digest: digest, target: t, attempt: 1, reason: why})
		}
	}
	for _, digest := range sortedKeys(o.inventory.NotPullable) {
		p.failed++
		t := o.inventory.NotPullable[digest]
		p.failures = append(p.failures, crowsnestv1alpha1.ScanFailure{
			Digest: digest, Reason: crowsnestv1alpha1.FailureNotPullable,
			Message: "the image was loaded into the node by digest only (imageID " + digest + "); it has no repository to pull it from, so it is not scanned; Pod " + t.Pods[0],
		})
	}
	// Jobs of digests no longer running: let active ones finish, clear the rest.
	for _, digest := range sortedKeys(o.jobs) {
		if j := o.jobs[digest]; o.inventory.Targets[digest] == nil && j.result.phase != jobActive {
			p.retire = append(p.retire, j)
		}
	}

	sort.SliceStable(candidates, func(a, b int) bool { return reasonRank(candidates[a].reason) < reasonRank(candidates[b].reason) })
	slots := max(o.maxConcurrent-active, 0)
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
	sort.SliceStable(p.failures, func(a, b int) bool { return earlier(p.failures[a].NextRetry, p.failures[b].NextRetry) })
	if len(p.failures) > crowsnestv1alpha1.MaxRecentFailures {
		p.failures = p.failures[:crowsnestv1alpha1.MaxRecentFailures]
	}
	return p
}

func failure(j *scanJob, next *time.Time) crowsnestv1alpha1.ScanFailure {
	f := crowsnestv1alpha1.ScanFailure{Digest: j.digest, Image: j.image, Reason: j.result.reason, Message: clip(j.result.message, 256), Attempt: int32(j.attempt)}
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
