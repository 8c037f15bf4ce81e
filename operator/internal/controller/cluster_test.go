package controller

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

func key(ns string) types.NamespacedName { return types.NamespacedName{Namespace: ns, Name: "default"} }

// TestShareRoundRobinOldestFirst: free slots go one at a time to the
// waiting Scanners, oldest first, each up to what it wants.
func TestShareRoundRobinOldestFirst(t *testing.T) {
	waiting := map[types.NamespacedName]waiter{
		key("a"): {want: 5, since: t0},
		key("b"): {want: 1, since: t0.Add(time.Second)},
		key("c"): {want: 5, since: t0.Add(2 * time.Second)},
	}
	for _, tt := range []struct {
		free    int
		a, b, c int
	}{
		{0, 0, 0, 0}, {1, 1, 0, 0}, {2, 1, 1, 0}, {3, 1, 1, 1}, {5, 2, 1, 2}, {8, 4, 1, 3}, {20, 5, 1, 5},
	} {
		got := share(waiting, nil, tt.free)
		if got[key("a")] != tt.a || got[key("b")] != tt.b || got[key("c")] != tt.c {
			t.Errorf("free %d: shares %v, want a=%d b=%d c=%d", tt.free, got, tt.a, tt.b, tt.c)
		}
	}
}

// TestShareMatchesOneSlotAtATime: share's heap gives exactly what handing
// the slots out one at a time by a full scan gives (the definition), on
// random waiting sets with ties in load and in waiting time.
func TestShareMatchesOneSlotAtATime(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 7))
	for round := range 500 {
		waiting := map[types.NamespacedName]waiter{}
		running := map[types.NamespacedName]int{}
		for i := range rng.IntN(30) {
			k := key(fmt.Sprintf("ns-%02d", i))
			waiting[k] = waiter{want: rng.IntN(4), since: t0.Add(time.Duration(rng.IntN(3)) * time.Second)}
			running[k] = rng.IntN(3)
		}
		free := rng.IntN(40)
		got, want := share(waiting, running, free), shareByScan(waiting, running, free)
		for k := range waiting {
			if got[k] != want[k] {
				t.Fatalf("round %d, free %d, %v: share gives %d, one slot at a time gives %d", round, free, k, got[k], want[k])
			}
		}
	}
}

// shareByScan is share's definition, written the slow way: each slot to the
// first Scanner, in (waiting since, namespace, name) order, with the fewest
// Jobs.
func shareByScan(waiting map[types.NamespacedName]waiter, running map[types.NamespacedName]int, free int) map[types.NamespacedName]int {
	keys := slices.SortedFunc(maps.Keys(waiting), func(a, b types.NamespacedName) int {
		if c := waiting[a].since.Compare(waiting[b].since); c != 0 {
			return c
		}
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	out := map[types.NamespacedName]int{}
	for ; free > 0; free-- {
		best := -1
		for i, k := range keys {
			if out[k] < waiting[k].want && (best < 0 || running[k]+out[k] < running[keys[best]]+out[keys[best]]) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		out[keys[best]]++
	}
	return out
}

// runningOf is a cache that shows running Jobs for digests.
func runningOf(digests ...string) func() map[string]types.NamespacedName {
	return func() map[string]types.NamespacedName {
		m := map[string]types.NamespacedName{}
		for _, d := range digests {
			m[d] = key(d)
		}
		return m
	}
}

func claimsFor(prefix string, n int) []claimRequest {
	out := make([]claimRequest, n)
	for i := range out {
		out[i] = claimRequest{digest: fmt.Sprint(prefix, i), job: key("job")}
	}
	return out
}

// TestAdmitHoldsTheCapAndWakesTheOthers: a Scanner asking for more than the
// cluster's free slots gets only its fair share while others wait; those
// that get a share are woken; what is admitted is claimed at once, so it
// holds its slot until the cache shows the Job.
func TestAdmitHoldsTheCapAndWakesTheOthers(t *testing.T) {
	now := t0
	var woken []types.NamespacedName
	c := newCluster(func() time.Time { return now }, 4, 0, func(k types.NamespacedName) { woken = append(woken, k) })

	// b asks first and gets everything free; its Jobs are claimed.
	if got := c.admit(key("b"), claimsFor("b", 3), runningOf("x")); len(got) != 3 {
		t.Fatalf("b got %v, want 3 (cap 4, 1 running)", got)
	}
	now = now.Add(time.Second)
	if got := c.admit(key("a"), claimsFor("a", 2), runningOf("x")); len(got) != 0 {
		t.Fatalf("a got %v with the cap reached by b's claims", got)
	}
	now = now.Add(time.Second)
	if got := c.admit(key("c"), claimsFor("c", 2), runningOf("x")); len(got) != 0 {
		t.Fatalf("c got %v with the cap reached", got)
	}
	// x and b0 finish: two slots free. b reconciles (its Job finished) and
	// wants one more, but a and c waited longer: one slot each, and both
	// are woken.
	c.release("b0", key("b"))
	now = now.Add(2 * time.Second)
	if got := c.admit(key("b"), []claimRequest{{digest: "b9"}}, runningOf()); len(got) != 0 {
		t.Fatalf("b got %v ahead of a and c, which waited longer", got)
	}
	if len(woken) != 2 || woken[0] == woken[1] {
		t.Fatalf("woken %v, want a and c", woken)
	}
	if got := c.admit(key("a"), claimsFor("a", 2), runningOf()); len(got) != 1 || got[0] != "a0" {
		t.Errorf("a got %v, want its one slot (a0)", got)
	}
	// A claim older than claimTTL was never created: it frees its slot.
	now = now.Add(claimTTL)
	if got := c.admit(key("c"), claimsFor("c", 2), runningOf()); len(got) != 2 {
		t.Errorf("c got %v after the stale claims expired, want 2", got)
	}

	// No cap: everything unclaimed is admitted.
	free := newCluster(time.Now, 0, 0, func(types.NamespacedName) {})
	if got := free.admit(key("a"), claimsFor("d", 100), runningOf()); len(got) != 100 {
		t.Errorf("no cap admitted %d of 100", len(got))
	}
	if got := free.admit(key("b"), claimsFor("d", 100), runningOf()); len(got) != 0 {
		t.Errorf("another Scanner was admitted %d digests a claimed", len(got))
	}
}

// TestClaimsKeepOneJobPerDigest: while one Scanner's claim is live, no other
// may take the digest; released or expired, it is free again.
func TestClaimsKeepOneJobPerDigest(t *testing.T) {
	now := t0
	c := newCluster(func() time.Time { return now }, 0, 0, func(types.NamespacedName) {})
	d := []claimRequest{{digest: dg('a')}}
	if len(c.admit(key("a"), d, runningOf())) != 1 {
		t.Fatal("first claim refused")
	}
	if len(c.admit(key("b"), d, runningOf())) != 0 || !c.claimedElsewhere(dg('a'), key("b")) || c.claimedElsewhere(dg('a'), key("a")) {
		t.Fatal("a second Scanner took a claimed digest")
	}
	if len(c.admit(key("a"), d, runningOf())) != 1 || !c.claimed(dg('a'), key("a")) {
		t.Fatal("the owner could not renew its claim")
	}
	c.release(dg('a'), key("b")) // not b's to release
	if len(c.admit(key("b"), d, runningOf())) != 0 {
		t.Fatal("another Scanner released a's claim")
	}
	c.release(dg('a'), key("a"))
	if len(c.admit(key("b"), d, runningOf())) != 1 {
		t.Fatal("a released claim stayed taken")
	}
	now = now.Add(claimTTL)
	if len(c.admit(key("a"), d, runningOf())) != 1 {
		t.Fatal("an expired claim stayed taken")
	}
	c.forget(key("a"))
	if c.claimed(dg('a'), key("a")) {
		t.Fatal("a Scanner that is gone kept its claims")
	}
}

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

// TestRescanRateLimit: the cluster-wide rescan rate lets a burst of a tenth
// of a minute's rescans start, then one per interval.
func TestRescanRateLimit(t *testing.T) {
	now := t0
	c := newCluster(func() time.Time { return now }, 0, 60, func(types.NamespacedName) {})
	started := 0
	for range 100 {
		if c.rescanDelay() == 0 {
			started++
		}
	}
	if started != 6 {
		t.Fatalf("%d rescans started at once, want a burst of 6 at 60/min", started)
	}
	d := c.rescanDelay()
	if d <= 0 || d > time.Second {
		t.Fatalf("next rescan in %v, want within a second", d)
	}
	now = now.Add(time.Second)
	if c.rescanDelay() != 0 {
		t.Fatal("no rescan a second later")
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

// BenchmarkShare: one admit's fair share with a ClusterScanner over 2,000
// namespaces all waiting and one slot free (the common case while the cap
// is full), by share and by the one-slot-at-a-time definition. Both
// give the same shares (TestShareMatchesOneSlotAtATime); the benchmark
// checks that for its own input too.
func BenchmarkShare(b *testing.B) {
	waiting := map[types.NamespacedName]waiter{}
	running := map[types.NamespacedName]int{}
	for i := range 2000 {
		k := key(fmt.Sprintf("ns-%04d", i))
		waiting[k] = waiter{want: 1 + i%3, since: t0.Add(time.Duration(i%50) * time.Millisecond)}
		running[k] = i % 2
	}
	for _, free := range []int{1, 50} {
		if got, want := share(waiting, running, free), shareByScan(waiting, running, free); !maps.Equal(got, want) {
			b.Fatalf("free %d: share %v, definition %v", free, got, want)
		}
		b.Run(fmt.Sprintf("share/free=%d", free), func(b *testing.B) {
			for b.Loop() {
				share(waiting, running, free)
			}
		})
		b.Run(fmt.Sprintf("definition/free=%d", free), func(b *testing.B) {
			for b.Loop() {
				shareByScan(waiting, running, free)
			}
		})
	}
}

// TestPeerDelayScalesWithScanners: other Scanners' Jobs wake a Scanner
// after statusDelay, longer when there are so many Scanners that their
// wake-ups would exceed peerWakeupsPerSecond, never longer than
// maxPeerDelay.
func TestPeerDelayScalesWithScanners(t *testing.T) {
	for _, tt := range []struct {
		scanners int64
		want     time.Duration
	}{{0, statusDelay}, {200, statusDelay}, {400, 10 * time.Second}, {2000, 50 * time.Second}, {100000, maxPeerDelay}} {
		r := &ScannerReconciler{}
		r.scannerCount.Store(tt.scanners)
		if got := r.peerDelay(); got != tt.want {
			t.Errorf("%d Scanners: peer delay %v, want %v", tt.scanners, got, tt.want)
		}
	}
}
