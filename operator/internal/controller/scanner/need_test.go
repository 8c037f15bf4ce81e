package scanner

import (
	"fmt"
	"strings"
	"testing"
	"time"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	"github.com/crowsnest-dev/crowsnest/operator/internal/discovery"
	"github.com/crowsnest-dev/crowsnest/operator/internal/scanjob"
)

// summary renders a need in a few words, for table tests.
func summary(n need) string {
	var s []string
	for _, f := range []struct {
		on   bool
		word string
	}{{n.image, "image"}, {n.scanned, "scanned"}, {n.active, "active"}, {n.queued, "queued"}} {
		if f.on {
			s = append(s, f.word)
		}
	}
	if f := n.failure; f != nil {
		w := "failed:" + f.Reason
		if f.NextRetry != nil {
			w += "@" + f.NextRetry.Sub(t0).String()
		}
		s = append(s, w)
	}
	if c := n.scan; c != nil {
		w := fmt.Sprintf("scan:%s/%d", c.reason, c.attempt)
		if c.replace != nil {
			w += "+replace"
		}
		s = append(s, w)
	}
	if n.retire != nil {
		s = append(s, "retire")
	}
	if n.wakeIn != 0 {
		s = append(s, "wake:"+n.wakeIn.String())
	}
	return strings.Join(s, " ")
}

func TestNeedsScan(t *testing.T) {
	tests := []struct {
		name      string
		scannedAt time.Time
		found     bool
		rescan    time.Duration
		want      bool
		reason    eventsv1.NeedReason
	}{
		{"no report", time.Time{}, false, time.Hour, true, eventsv1.NeedNew},
		{"fresh", t0.Add(-59 * time.Minute), true, time.Hour, false, ""},
		{"exactly due", t0.Add(-time.Hour), true, time.Hour, true, eventsv1.NeedRescan},
		{"stale", t0.Add(-48 * time.Hour), true, time.Hour, true, eventsv1.NeedRescan},
		{"rescans off", t0.Add(-480 * time.Hour), true, 0, false, ""},
	}
	for _, tt := range tests {
		if got, why := needsScan(tt.scannedAt, tt.found, t0, tt.rescan); got != tt.want || why != tt.reason {
			t.Errorf("%s: needsScan = %v %q, want %v %q", tt.name, got, why, tt.want, tt.reason)
		}
	}
}

func TestClassify(t *testing.T) {
	a, z := dg('a'), dg('z') // a runs; z only has a Job
	tests := []struct {
		name   string
		mod    func(*observed)
		digest string
		want   string
	}{
		{"no report: a new scan", func(o *observed) {}, a, "image scan:new/1"},
		{"fresh report: scanned, wakes for the rescan", func(o *observed) { o.reports[a] = t0.Add(-time.Hour) }, a, "image scanned wake:23h0m0s"},
		{"stale report: a rescan", func(o *observed) { o.reports[a] = t0.Add(-25 * time.Hour) }, a, "image scan:rescan/1"},
		{"rescans off: scanned, no wake", func(o *observed) { o.rescanInterval, o.reports[a] = 0, t0.Add(-480*time.Hour) }, a, "image scanned"},
		{"running job", func(o *observed) { o.jobs[a] = job(a, jobActive, 1, time.Time{}) }, a, "image active"},
		{"running job of a scanned digest", func(o *observed) {
			o.reports[a], o.jobs[a] = t0, job(a, jobActive, 1, time.Time{})
		}, a, "image scanned active wake:24h0m0s"},
		{"failed job waits out its backoff", func(o *observed) { o.jobs[a] = job(a, jobFailed, 2, t0.Add(-time.Minute)) }, a,
			"image failed:GrypeFailed@1m0s wake:1m0s"},
		{"failed job is retried once due", func(o *observed) { o.jobs[a] = job(a, jobFailed, 2, t0.Add(-2*time.Minute)) }, a,
			"image failed:GrypeFailed@0s scan:retry/3+replace"},
		{"failed job of a scanned digest is retired", func(o *observed) {
			o.reports[a], o.jobs[a] = t0, job(a, jobFailed, 1, t0.Add(-time.Hour))
		}, a, "image scanned retire wake:24h0m0s"},
		{"failed job, lookup down: listed without a retry", func(o *observed) {
			o.reports, o.jobs[a] = nil, job(a, jobFailed, 1, t0.Add(-time.Hour))
		}, a, "image failed:GrypeFailed"},
		{"succeeded job with its report is retired", func(o *observed) {
			o.reports[a], o.jobs[a] = t0, job(a, jobSucceeded, 1, t0)
		}, a, "image scanned retire wake:24h0m0s"},
		{"succeeded job without a report: retired, then queued", func(o *observed) { o.jobs[a] = job(a, jobSucceeded, 1, t0) }, a, "image queued retire"},
		{"lookup down: nothing to do", func(o *observed) { o.reports = nil }, a, "image"},
		{"lookup down, succeeded job: kept", func(o *observed) { o.reports, o.jobs[a] = nil, job(a, jobSucceeded, 1, t0) }, a, "image"},
		{"not pullable", func(o *observed) {
			o.inventory.NotPullable[z] = &discovery.Target{Pods: []string{"kind-loaded"}}
		}, z, "image failed:NotPullable"},
		{"finished job of a digest no longer running", func(o *observed) { o.jobs[z] = job(z, jobFailed, 1, t0) }, z, "retire"},
		{"running job of a digest no longer running", func(o *observed) { o.jobs[z] = job(z, jobActive, 1, time.Time{}) }, z, "active"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := base(a)
			tt.mod(&o)
			var got []string
			for _, n := range classify(o) {
				if n.digest == tt.digest {
					got = append(got, summary(n))
				}
			}
			if len(got) != 1 || got[0] != tt.want {
				t.Errorf("need = %q, want [%q]", got, tt.want)
			}
		})
	}
}

func TestClassifyOrder(t *testing.T) {
	o := base(dg('c'), dg('a'))
	o.inventory.NotPullable[dg('b')] = &discovery.Target{Pods: []string{"p"}}
	o.jobs[dg('d')] = job(dg('d'), jobSucceeded, 1, t0)
	var order []string
	for _, n := range classify(o) {
		order = append(order, n.digest[7:8])
	}
	if got := strings.Join(order, ""); got != "acbd" {
		t.Errorf("order %q, want running (sorted), not pullable, then Jobs of gone digests", got)
	}
}

// TestSettleSucceeded: a Job that succeeded while results-api has no current
// report for its digest failed (ReportMissing), keeping its attempt, so it
// is retried with backoff instead of starting over at attempt 1; until the
// lookup answers nothing is decided.
func TestSettleSucceeded(t *testing.T) {
	a, z := dg('a'), dg('z') // a runs; z only has a Job
	tests := []struct {
		name   string
		mod    func(o *observed, j *scanJob)
		digest string
		want   string // phase/reason, + "unconfirmed"
	}{
		{"report arrived", func(o *observed, j *scanJob) { o.reports[a] = t0 }, a, "succeeded"},
		{"no report", func(o *observed, j *scanJob) {}, a, "failed/ReportMissing"},
		{"only a stale report", func(o *observed, j *scanJob) { o.reports[a] = t0.Add(-25 * time.Hour) }, a, "failed/ReportMissing"},
		{"lookup down", func(o *observed, j *scanJob) { o.reports = nil }, a, "succeeded unconfirmed"},
		{"recorded before the report was deleted", func(o *observed, j *scanJob) {
			j.job.Annotations = map[string]string{scanjob.AnnotationOutcome: string(eventsv1.OutcomeSucceeded)}
		}, a, "succeeded"},
		{"digest no longer running", func(o *observed, j *scanJob) {}, z, "succeeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := base(a)
			j := job(tt.digest, jobSucceeded, 2, t0.Add(-time.Minute))
			o.jobs[tt.digest] = j
			tt.mod(&o, j)
			settleSucceeded(o)
			got := map[jobPhase]string{jobSucceeded: "succeeded", jobFailed: "failed", jobActive: "active"}[j.result.phase]
			if j.result.phase == jobFailed {
				got += "/" + j.result.reason
				if !j.result.finishedAt.Equal(t0.Add(-time.Minute)) || j.attempt != 2 || j.result.message == "" {
					t.Errorf("failure %+v attempt %d: want the Job's finish time, attempt and a message", j.result, j.attempt)
				}
			}
			if j.unconfirmed {
				got += " unconfirmed"
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}

	// Then it is a failure like any other: listed with its attempt, retried
	// with the backoff of that attempt (2m after attempt 2).
	o := base(a)
	o.reports = map[string]time.Time{}
	o.jobs[a] = job(a, jobSucceeded, 2, t0.Add(-time.Minute))
	settleSucceeded(o)
	if got := summary(classify(o)[0]); got != "image failed:ReportMissing@1m0s wake:1m0s" {
		t.Errorf("need %q, want a ReportMissing failure waiting out its backoff", got)
	}
	o.now = t0.Add(time.Minute)
	if got := summary(classify(o)[0]); got != "image failed:ReportMissing@1m0s scan:retry/3+replace" {
		t.Errorf("need %q, want attempt 3 once due", got)
	}
}
