package scanner

import (
	"time"

	"github.com/crowsnest-dev/crowsnest/operator/internal/discovery"
	"github.com/crowsnest-dev/crowsnest/operator/internal/scanjob"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
)

// need is what one digest calls for, before the concurrency cap applies.
// The flags are not exclusive: a digest with a fresh report can still have
// a running Job, or a finished one to retire.
type need struct {
	digest    string
	image     bool                           // a running image; false for a Job whose digest no longer runs
	scanned   bool                           // has a fresh report
	active    bool                           // its scan Job is running
	elsewhere bool                           // that Job, or its failed one, is another Scanner's
	queued    bool                           // waits for its finished Job to go before it is scanned again
	failure   *crowsnestv1alpha1.ScanFailure // its last scan failed, or it cannot be scanned
	scan      *scanRequest                   // wants a Job now, if a slot is free
	retire    *scanJob                       // a finished Job to delete
	wakeIn    time.Duration                  // > 0: a rescan or retry is due then
	scannedAt time.Time                      // its report's time; zero when none is known
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

// classify says what each digest needs: the running ones (pullable, then
// not pullable), then those whose Jobs outlived their Pods, each group in
// digest order.
func classify(o observed) []need {
	lookupOK := o.reports != nil
	needs := make([]need, 0, len(o.inventory.Targets)+len(o.inventory.NotPullable))
	for _, digest := range sortedKeys(o.inventory.Targets) {
		t := o.inventory.Targets[digest]
		n := need{digest: digest, image: true}
		scannedAt, found := o.reports[digest]
		if found {
			n.scannedAt = scannedAt
		}
		interval := o.interval(digest)
		due, why := needsScan(scannedAt, found, o.now, interval)
		if lookupOK && !due {
			n.scanned = true
			if interval > 0 {
				n.wakeIn = scannedAt.Add(interval).Sub(o.now)
			}
		}
		e := o.elsewhere[digest]
		switch j := o.jobs[digest]; {
		case j == nil && o.claimed[digest]:
			n.active = true // created a moment ago
		case j != nil && j.result.phase == jobActive:
			n.active = true
		case j != nil && j.result.phase == jobFailed && lookupOK && due:
			next := j.result.finishedAt.Add(o.backoff.delay(j.attempt))
			n.failure = failure(j, &next)
			if o.now.Before(next) {
				n.wakeIn = next.Sub(o.now)
			} else {
				n.scan = &scanRequest{digest: digest, target: t, attempt: j.attempt + 1, reason: eventsv1.NeedRetry, replace: j, failure: n.failure}
			}
		case j != nil && j.result.phase == jobFailed:
			if lookupOK {
				n.retire = j // a report exists after all
			} else {
				n.failure = failure(j, nil)
			}
		case j != nil: // succeeded (one without its report is failed: settleSucceeded)
			if lookupOK {
				n.retire = j
				n.queued = due // the report was deleted since: scan again once the Job is gone
			}
		case e != nil:
			elsewhere(&n, e, o, t, lookupOK && due)
		case lookupOK && due:
			if f, ok := o.recorded[digest]; ok && f.Attempt > 0 {
				retryAfterGone(&n, f, o, t)
				break
			}
			n.scan = &scanRequest{digest: digest, target: t, attempt: 1, reason: why}
		}
		if n.scan != nil && e != nil && e.result.phase == jobActive {
			// One Job per digest in the cluster: another Scanner's runs.
			n.scan, n.failure, n.active, n.elsewhere = nil, nil, true, true
		}
		needs = append(needs, n)
	}
	for _, digest := range sortedKeys(o.inventory.NotPullable) {
		t := o.inventory.NotPullable[digest]
		needs = append(needs, need{digest: digest, image: true, failure: &crowsnestv1alpha1.ScanFailure{
			Digest: digest, Reason: crowsnestv1alpha1.FailureNotPullable,
			Message: "the image was loaded into the node by digest only (imageID " + digest + "); it has no repository to pull it from, so it is not scanned; Pod " + t.Pods[0],
		}})
	}
	// Jobs of digests no longer running: let active ones finish, clear the rest.
	for _, digest := range sortedKeys(o.jobs) {
		if o.inventory.Targets[digest] != nil {
			continue
		}
		j := o.jobs[digest]
		if j.result.phase == jobActive {
			needs = append(needs, need{digest: digest, active: true})
		} else {
			needs = append(needs, need{digest: digest, retire: j})
		}
	}
	return needs
}

// retryAfterGone is what a digest needs whose failed Job is gone while its
// failure is still recorded (f): the retry it was waiting for, as the next
// attempt and after the backoff already set, not a fresh attempt 1.
func retryAfterGone(n *need, f crowsnestv1alpha1.ScanFailure, o observed, t *discovery.Target) {
	n.failure = &f
	if f.NextRetry != nil && o.now.Before(f.NextRetry.Time) {
		n.wakeIn = f.NextRetry.Sub(o.now)
		return
	}
	n.scan = &scanRequest{digest: n.digest, target: t, attempt: int(f.Attempt) + 1, reason: eventsv1.NeedRetry, failure: n.failure}
}

// elsewhere is what a digest needs that this Scanner has no Job for while
// another Scanner has (e): that Job speaks for it. A running one is
// "scanning" here too; a failed one is retried by its Scanner, after its
// backoff, unless the image could not be pulled from that namespace: then
// this namespace, whose Pods' pull secrets may differ, tries at once.
func elsewhere(n *need, e *scanJob, o observed, t *discovery.Target, due bool) {
	n.elsewhere = true
	switch e.result.phase {
	case jobActive:
		n.active = true
	case jobFailed:
		if e.job != nil && e.job.Annotations[scanjob.AnnotationOutcome] == "" {
			// Its Scanner has not recorded why yet; that record (a watched
			// change) says whether this namespace should try.
			n.active = true
			return
		}
		if !due {
			return
		}
		if e.result.reason == crowsnestv1alpha1.FailureImagePull && e.job != nil && e.job.Namespace != o.namespace {
			n.elsewhere = false
			n.scan = &scanRequest{digest: n.digest, target: t, attempt: e.attempt + 1, reason: eventsv1.NeedRetry}
			return
		}
		next := e.result.finishedAt.Add(o.backoff.delay(e.attempt))
		n.failure = failure(e, &next)
	default:
		n.queued = due // its Scanner retires it, and the report says the rest
	}
}

// interval is digest's rescan interval, jittered.
func (o observed) interval(digest string) time.Duration {
	return jittered(o.rescanInterval, digest, o.jitter)
}
