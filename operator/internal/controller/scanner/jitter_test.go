package scanner

import (
	"math"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/operator/internal/enqueue"
)

// TestRescanJitterSpreads: each digest's interval moves by less than 10%,
// the same every time, and digests spread evenly over the window, so a
// thousand reports stored in one wave come due over hours, not in a second.
func TestRescanJitterSpreads(t *testing.T) {
	const n, bins = 10000, 10
	var counts [bins]int
	interval := 24 * time.Hour
	for i := range n {
		d := testDigest(i)
		got := jittered(interval, d, 0.1)
		if got != jittered(interval, d, 0.1) {
			t.Fatal("jitter is not stable for a digest")
		}
		off := float64(got-interval) / float64(interval)
		if math.Abs(off) > 0.1 {
			t.Fatalf("digest %d: interval %v is off by %.3f", i, got, off)
		}
		counts[min(int((off+0.1)/0.2*bins), bins-1)]++
	}
	for b, c := range counts {
		if c < n/bins*8/10 || c > n/bins*12/10 {
			t.Errorf("bin %d holds %d of %d digests: not spread evenly (%v)", b, c, n, counts)
		}
	}
	if jittered(0, dg('a'), 0.1) != 0 || jittered(interval, dg('a'), 0) != interval {
		t.Error("rescans off, or no jitter, must stay as they are")
	}
}

// TestClassifySpreadsRescans: 1,000 reports stored in the same second come
// due over a window of ±10% of the interval, not all at once.
func TestClassifySpreadsRescans(t *testing.T) {
	var digests []string
	for i := range 1000 {
		digests = append(digests, testDigest(i))
	}
	o := base(digests...)
	o.jitter = 0.1
	for _, d := range digests {
		o.reports[d] = t0.Add(-24 * time.Hour)
	}
	due, latest := 0, time.Duration(0)
	for _, n := range classify(o) {
		switch {
		case n.scan != nil:
			due++
		case n.wakeIn > 0:
			latest = max(latest, n.wakeIn)
		default:
			t.Fatalf("digest %s neither due nor waiting: %s", n.digest, summary(n))
		}
	}
	if due < 400 || due > 600 {
		t.Errorf("%d of 1000 due at exactly the interval, want about half", due)
	}
	if latest > 144*time.Minute || latest < 130*time.Minute {
		t.Errorf("the last wakes in %v, want close to 10%% of 24h (2h24m)", latest)
	}
}

// TestPeerDelayScalesWithScanners: other Scanners' Jobs wake a Scanner
// after enqueue.StatusDelay, longer when there are so many Scanners that their
// wake-ups would exceed peerWakeupsPerSecond, never longer than
// maxPeerDelay.
func TestPeerDelayScalesWithScanners(t *testing.T) {
	for _, tt := range []struct {
		scanners int64
		want     time.Duration
	}{{0, enqueue.StatusDelay}, {50, enqueue.StatusDelay}, {400, 40 * time.Second}, {2000, maxPeerDelay}, {100000, maxPeerDelay}} {
		r := &Reconciler{}
		r.scannerCount.Store(tt.scanners)
		if got := r.peerDelay(); got != tt.want {
			t.Errorf("%d Scanners: peer delay %v, want %v", tt.scanners, got, tt.want)
		}
	}
}
