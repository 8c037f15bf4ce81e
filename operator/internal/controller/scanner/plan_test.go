package scanner

import (
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
	"github.com/crowsnest-dev/crowsnest/operator/internal/discovery"
)

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func dg(c byte) string { return "sha256:" + strings.Repeat(string(c), 64) }

func targets(digests ...string) discovery.Inventory {
	inv := discovery.Inventory{Targets: map[string]*discovery.Target{}, NotPullable: map[string]*discovery.Target{}}
	for _, d := range digests {
		inv.Targets[d] = &discovery.Target{Image: discovery.Image{Repository: "docker.io/library/x", Digest: d}, Pods: []string{"p"}, PodCount: 1}
	}
	return inv
}

func job(d string, phase jobPhase, attempt int, finished time.Time) *scanJob {
	return &scanJob{job: &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "j-" + d[7:9]}}, digest: d, attempt: attempt,
		result: jobResult{phase: phase, finishedAt: finished, reason: crowsnestv1alpha1.FailureGrype}}
}

func base(digests ...string) observed {
	return observed{now: t0, inventory: targets(digests...), jobs: map[string]*scanJob{}, reports: map[string]time.Time{},
		rescanInterval: 24 * time.Hour, maxConcurrent: 2, backoff: backoff{base: time.Minute, max: time.Hour}}
}

func creates(p plan) string {
	var s []string
	for _, c := range p.create {
		s = append(s, c.digest[7:8]+":"+string(c.reason))
	}
	return strings.Join(s, ",")
}

func TestDecide(t *testing.T) {
	a, b, c, d := dg('a'), dg('b'), dg('c'), dg('d')
	tests := []struct {
		name                                      string
		mod                                       func(*observed)
		create                                    string
		scanned, queued, scanning, failed, retire int
		requeue                                   time.Duration
	}{
		{name: "nothing scanned, cap 2 of 4", mod: func(o *observed) {}, create: "a:new,b:new", queued: 2, scanning: 2},
		{name: "active jobs fill the cap", mod: func(o *observed) {
			o.jobs[a], o.jobs[b] = job(a, jobActive, 1, time.Time{}), job(b, jobActive, 1, time.Time{})
		}, queued: 2, scanning: 2},
		{name: "an active job of a vanished digest still counts", mod: func(o *observed) {
			o.jobs[dg('z')] = job(dg('z'), jobActive, 1, time.Time{})
		}, create: "a:new", queued: 3, scanning: 2},
		{name: "scanned digests get no job; wake at the earliest rescan", mod: func(o *observed) {
			o.reports = map[string]time.Time{a: t0.Add(-23 * time.Hour), b: t0.Add(-time.Hour), c: t0, d: t0}
		}, scanned: 4, requeue: time.Hour},
		{name: "stale report is rescanned after new ones", mod: func(o *observed) {
			o.maxConcurrent = 3
			o.reports = map[string]time.Time{a: t0.Add(-25 * time.Hour), c: t0, d: t0}
		}, create: "b:new,a:rescan", scanned: 2, scanning: 2, requeue: 24 * time.Hour},
		{name: "failed job waits out its backoff", mod: func(o *observed) {
			o.reports = map[string]time.Time{b: t0, c: t0, d: t0}
			o.jobs[a] = job(a, jobFailed, 2, t0.Add(-time.Minute)) // attempt 2: waits 2m
		}, scanned: 3, failed: 1, requeue: time.Minute},
		{name: "failed job is replaced once due", mod: func(o *observed) {
			o.reports = map[string]time.Time{b: t0, c: t0, d: t0}
			o.jobs[a] = job(a, jobFailed, 2, t0.Add(-2*time.Minute))
		}, create: "a:retry", scanned: 3, scanning: 1, requeue: 24 * time.Hour},
		{name: "succeeded job is retired", mod: func(o *observed) {
			o.reports = map[string]time.Time{a: t0, b: t0, c: t0, d: t0}
			o.jobs[a] = job(a, jobSucceeded, 1, t0)
		}, scanned: 4, retire: 1, requeue: 24 * time.Hour},
		{name: "lookup down: nothing created, nothing retired", mod: func(o *observed) {
			o.reports = nil
			o.jobs[a] = job(a, jobFailed, 1, t0.Add(-time.Hour))
			o.jobs[b] = job(b, jobSucceeded, 1, t0)
		}, failed: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := base(a, b, c, d)
			tt.mod(&o)
			p := decide(o)
			if got := creates(p); got != tt.create {
				t.Errorf("create = %q, want %q", got, tt.create)
			}
			if p.scanned != tt.scanned || p.queued != tt.queued || p.scanning != tt.scanning || p.failed != tt.failed || len(p.retire) != tt.retire {
				t.Errorf("scanned %d queued %d scanning %d failed %d retire %d; want %d %d %d %d %d",
					p.scanned, p.queued, p.scanning, p.failed, len(p.retire), tt.scanned, tt.queued, tt.scanning, tt.failed, tt.retire)
			}
			if p.requeueAfter != tt.requeue {
				t.Errorf("requeueAfter = %v, want %v", p.requeueAfter, tt.requeue)
			}
			if p.images != 4 {
				t.Errorf("images = %d", p.images)
			}
		})
	}
}

func TestDecideNotPullableIsFailedOnce(t *testing.T) {
	o := base()
	o.inventory.NotPullable[dg('e')] = &discovery.Target{Pods: []string{"kind-loaded"}}
	p := decide(o)
	if p.failed != 1 || len(p.create) != 0 || p.requeueAfter != 0 || len(p.failures) != 1 || p.failures[0].Reason != crowsnestv1alpha1.FailureNotPullable || p.failures[0].NextRetry != nil {
		t.Errorf("plan = %+v", p)
	}
}

func TestDecideBoundsFailures(t *testing.T) {
	o := base()
	o.reports = map[string]time.Time{}
	for i := range 30 {
		d := "sha256:" + strings.Repeat("0", 62) + string("0123456789abcdef"[i/16]) + string("0123456789abcdef"[i%16])
		o.inventory.Targets[d] = &discovery.Target{Pods: []string{"p"}}
		o.jobs[d] = job(d, jobFailed, 1+i%5, t0)
	}
	p := decide(o)
	if p.failed != 30 || len(p.failures) != crowsnestv1alpha1.MaxRecentFailures {
		t.Fatalf("failed %d, listed %d", p.failed, len(p.failures))
	}
	for i := 1; i < len(p.failures); i++ {
		if p.failures[i].NextRetry.Before(p.failures[i-1].NextRetry) {
			t.Errorf("failures not soonest first at %d", i)
		}
	}
}

// needOf builds a need for allocate's table.
func needOf(c byte, mods ...func(*need)) need {
	n := need{digest: dg(c), image: true}
	for _, m := range mods {
		m(&n)
	}
	return n
}

func wants(reason eventsv1.NeedReason) func(*need) {
	return func(n *need) {
		n.scan = &scanRequest{digest: n.digest, attempt: 1, reason: reason}
		if reason == eventsv1.NeedRetry {
			n.scan.attempt = 2
			n.failure = &crowsnestv1alpha1.ScanFailure{Digest: n.digest, Reason: crowsnestv1alpha1.FailureGrype, NextRetry: &metav1.Time{Time: t0}}
		}
	}
}

func failedUntil(next time.Duration) func(*need) {
	return func(n *need) {
		n.failure = &crowsnestv1alpha1.ScanFailure{Digest: n.digest, Reason: crowsnestv1alpha1.FailureGrype}
		if next >= 0 {
			n.failure.NextRetry = &metav1.Time{Time: t0.Add(next)}
		}
	}
}

func TestAllocate(t *testing.T) {
	scanned := func(n *need) { n.scanned = true }
	active := func(n *need) { n.active = true }
	gone := func(n *need) { n.image = false }
	tests := []struct {
		name                                              string
		needs                                             []need
		slots                                             int
		create                                            string
		images, scanned, queued, scanning, failed, retire int
		requeue                                           time.Duration
		check                                             func(plan) error
	}{
		{name: "the cap cuts candidates; the rest is queued", slots: 2,
			needs:  []need{needOf('a', wants(eventsv1.NeedNew)), needOf('b', wants(eventsv1.NeedNew)), needOf('c', wants(eventsv1.NeedNew))},
			create: "a:new,b:new", images: 3, queued: 1, scanning: 2},
		{name: "new before retry before rescan", slots: 3,
			needs:  []need{needOf('a', wants(eventsv1.NeedRescan)), needOf('b', wants(eventsv1.NeedRetry)), needOf('c', wants(eventsv1.NeedNew))},
			create: "c:new,b:retry,a:rescan", images: 3, scanning: 3},
		{name: "a retry without a slot stays failed", slots: 0,
			needs:  []need{needOf('a', wants(eventsv1.NeedRetry))},
			images: 1, queued: 1, failed: 1,
			check: func(p plan) error {
				if len(p.failures) != 1 {
					return fmt.Errorf("failures %+v", p.failures)
				}
				return nil
			}},
		{name: "a retry that gets a slot leaves the failures", slots: 1,
			needs:  []need{needOf('a', wants(eventsv1.NeedRetry)), needOf('b', failedUntil(time.Minute))},
			create: "a:retry", images: 2, scanning: 1, failed: 1,
			check: func(p plan) error {
				if len(p.failures) != 1 || p.failures[0].Digest != dg('b') {
					return fmt.Errorf("failures %+v", p.failures)
				}
				return nil
			}},
		{name: "negative slots are none", slots: -3, needs: []need{needOf('a', wants(eventsv1.NeedNew))}, images: 1, queued: 1},
		{name: "counts", slots: 5,
			needs: []need{needOf('a', scanned), needOf('b', active), needOf('c', active, gone),
				needOf('d', gone, func(n *need) { n.retire = &scanJob{} }), needOf('e', func(n *need) { n.queued, n.retire = true, &scanJob{} })},
			images: 3, scanned: 1, queued: 1, scanning: 2, retire: 2},
		{name: "the earliest wake wins; the newest report is the last scan", slots: 1,
			needs: []need{needOf('a', scanned, func(n *need) { n.wakeIn, n.scannedAt = 2*time.Hour, t0.Add(-time.Hour) }),
				needOf('b', scanned, func(n *need) { n.wakeIn, n.scannedAt = time.Hour, t0.Add(-3*time.Hour) }), needOf('c', scanned)},
			images: 3, scanned: 3, requeue: time.Hour,
			check: func(p plan) error {
				if !p.lastScan.Equal(t0.Add(-time.Hour)) {
					return fmt.Errorf("lastScan %v", p.lastScan)
				}
				return nil
			}},
		{name: "failures: soonest retry first, no retry last, bounded", slots: 0,
			needs: func() []need {
				var ns []need
				for i := range 12 {
					ns = append(ns, needOf(byte('a'+i), failedUntil(time.Duration(11-i)*time.Minute-time.Minute)))
				}
				return ns
			}(),
			images: 12, failed: 12,
			check: func(p plan) error {
				if len(p.failures) != crowsnestv1alpha1.MaxRecentFailures {
					return fmt.Errorf("%d failures listed", len(p.failures))
				}
				for i, f := range p.failures {
					if f.NextRetry == nil || (i > 0 && f.NextRetry.Before(p.failures[i-1].NextRetry)) {
						return fmt.Errorf("failure %d out of order: %+v", i, p.failures)
					}
				}
				return nil
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := allocate(tt.needs, tt.slots)
			if got := creates(p); got != tt.create {
				t.Errorf("create = %q, want %q", got, tt.create)
			}
			if p.images != tt.images || p.scanned != tt.scanned || p.queued != tt.queued || p.scanning != tt.scanning || p.failed != tt.failed || len(p.retire) != tt.retire {
				t.Errorf("images %d scanned %d queued %d scanning %d failed %d retire %d; want %d %d %d %d %d %d",
					p.images, p.scanned, p.queued, p.scanning, p.failed, len(p.retire), tt.images, tt.scanned, tt.queued, tt.scanning, tt.failed, tt.retire)
			}
			if p.requeueAfter != tt.requeue {
				t.Errorf("requeueAfter = %v, want %v", p.requeueAfter, tt.requeue)
			}
			if tt.check != nil {
				if err := tt.check(p); err != nil {
					t.Error(err)
				}
			}
		})
	}
}
