package scanbudget

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func key(ns string) types.NamespacedName { return types.NamespacedName{Namespace: ns, Name: "default"} }

func dg(c byte) string { return "sha256:" + strings.Repeat(string(c), 64) }

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

func claimsFor(prefix string, n int) []Request {
	out := make([]Request, n)
	for i := range out {
		out[i] = Request{Digest: fmt.Sprint(prefix, i), Job: key("job")}
	}
	return out
}

// TestAdmit: which wanted digests one Admit lets start, by the cap, what
// the cache shows running and the claims held, each case from a fresh
// budget with no API server.
func TestAdmit(t *testing.T) {
	type held struct {
		digest, owner string
		age           time.Duration
	}
	for _, tt := range []struct {
		name    string
		cap     int
		claims  []held
		running []string // digests the cache shows running (for Scanner "r")
		want    []string
		got     []string
	}{
		{name: "no cap admits every unclaimed digest", want: []string{"a", "b", "c"}, got: []string{"a", "b", "c"}},
		{name: "a live claim of another Scanner is skipped", claims: []held{{"b", "other", time.Second}},
			want: []string{"a", "b"}, got: []string{"a"}},
		{name: "an expired claim is free again", claims: []held{{"b", "other", ClaimTTL}},
			want: []string{"a", "b"}, got: []string{"a", "b"}},
		{name: "the owner's own claim is renewed", claims: []held{{"a", "self", time.Second}},
			want: []string{"a"}, got: []string{"a"}},
		{name: "cap full of running Jobs admits nothing", cap: 2, running: []string{"x", "y"},
			want: []string{"a"}, got: []string{}},
		{name: "cap admits what is free, in order", cap: 3, running: []string{"x"},
			want: []string{"a", "b", "c"}, got: []string{"a", "b"}},
		{name: "another Scanner's claim not yet in the cache holds a slot", cap: 2, claims: []held{{"x", "other", time.Second}},
			want: []string{"a", "b"}, got: []string{"a"}},
		{name: "a claim the cache shows running counts once", cap: 2, claims: []held{{"x", "other", time.Second}}, running: []string{"x"},
			want: []string{"a", "b"}, got: []string{"a"}},
		{name: "the owner's claims on what it wants again hold no extra slot", cap: 2,
			claims: []held{{"a", "self", time.Second}, {"b", "self", time.Second}},
			want:   []string{"a", "b"}, got: []string{"a", "b"}},
		{name: "the owner's claims on what it no longer wants hold their slots", cap: 2,
			claims: []held{{"a", "self", time.Second}},
			want:   []string{"b", "c"}, got: []string{"b"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := New(func() time.Time { return t0 }, tt.cap, 0, func(types.NamespacedName) {})
			for _, c := range tt.claims {
				b.claims[c.digest] = claim{owner: key(c.owner), at: t0.Add(-c.age)}
			}
			want := make([]Request, len(tt.want))
			for i, d := range tt.want {
				want[i] = Request{Digest: d, Job: key("job-" + d)}
			}
			got := b.Admit(key("self"), want, func() map[string]types.NamespacedName {
				m := map[string]types.NamespacedName{}
				for _, d := range tt.running {
					m[d] = key("r")
				}
				return m
			})
			if !slices.Equal(got, tt.got) {
				t.Fatalf("admitted %v, want %v", got, tt.got)
			}
			for _, d := range got {
				if !b.Claimed(d, key("self")) || !b.ClaimedElsewhere(d, key("other")) {
					t.Errorf("admitted %s is not claimed for its owner", d)
				}
			}
		})
	}
}

// TestAdmitHoldsTheCapAndWakesTheOthers: a Scanner asking for more than the
// cluster's free slots gets only its fair share while others wait; those
// that get a share are woken; what is admitted is claimed at once, so it
// holds its slot until the cache shows the Job.
func TestAdmitHoldsTheCapAndWakesTheOthers(t *testing.T) {
	now := t0
	var woken []types.NamespacedName
	c := New(func() time.Time { return now }, 4, 0, func(k types.NamespacedName) { woken = append(woken, k) })

	// b asks first and gets everything free; its Jobs are claimed.
	if got := c.Admit(key("b"), claimsFor("b", 3), runningOf("x")); len(got) != 3 {
		t.Fatalf("b got %v, want 3 (cap 4, 1 running)", got)
	}
	now = now.Add(time.Second)
	if got := c.Admit(key("a"), claimsFor("a", 2), runningOf("x")); len(got) != 0 {
		t.Fatalf("a got %v with the cap reached by b's claims", got)
	}
	now = now.Add(time.Second)
	if got := c.Admit(key("c"), claimsFor("c", 2), runningOf("x")); len(got) != 0 {
		t.Fatalf("c got %v with the cap reached", got)
	}
	// x and b0 finish: two slots free. b reconciles (its Job finished) and
	// wants one more, but a and c waited longer: one slot each, and both
	// are woken.
	c.Release("b0", key("b"))
	now = now.Add(2 * time.Second)
	if got := c.Admit(key("b"), []Request{{Digest: "b9"}}, runningOf()); len(got) != 0 {
		t.Fatalf("b got %v ahead of a and c, which waited longer", got)
	}
	if len(woken) != 2 || woken[0] == woken[1] {
		t.Fatalf("woken %v, want a and c", woken)
	}
	if got := c.Admit(key("a"), claimsFor("a", 2), runningOf()); len(got) != 1 || got[0] != "a0" {
		t.Errorf("a got %v, want its one slot (a0)", got)
	}
	// A claim older than ClaimTTL was never created: it frees its slot.
	now = now.Add(ClaimTTL)
	if got := c.Admit(key("c"), claimsFor("c", 2), runningOf()); len(got) != 2 {
		t.Errorf("c got %v after the stale claims expired, want 2", got)
	}

	// No cap: everything unclaimed is admitted.
	free := New(time.Now, 0, 0, func(types.NamespacedName) {})
	if got := free.Admit(key("a"), claimsFor("d", 100), runningOf()); len(got) != 100 {
		t.Errorf("no cap admitted %d of 100", len(got))
	}
	if got := free.Admit(key("b"), claimsFor("d", 100), runningOf()); len(got) != 0 {
		t.Errorf("another Scanner was admitted %d digests a claimed", len(got))
	}
}

// TestClaimsKeepOneJobPerDigest: while one Scanner's claim is live, no other
// may take the digest; released or expired, it is free again.
func TestClaimsKeepOneJobPerDigest(t *testing.T) {
	now := t0
	c := New(func() time.Time { return now }, 0, 0, func(types.NamespacedName) {})
	d := []Request{{Digest: dg('a')}}
	if len(c.Admit(key("a"), d, runningOf())) != 1 {
		t.Fatal("first claim refused")
	}
	if len(c.Admit(key("b"), d, runningOf())) != 0 || !c.ClaimedElsewhere(dg('a'), key("b")) || c.ClaimedElsewhere(dg('a'), key("a")) {
		t.Fatal("a second Scanner took a claimed digest")
	}
	if len(c.Admit(key("a"), d, runningOf())) != 1 || !c.Claimed(dg('a'), key("a")) {
		t.Fatal("the owner could not renew its claim")
	}
	c.Release(dg('a'), key("b")) // not b's to release
	if len(c.Admit(key("b"), d, runningOf())) != 0 {
		t.Fatal("another Scanner released a's claim")
	}
	c.Release(dg('a'), key("a"))
	if len(c.Admit(key("b"), d, runningOf())) != 1 {
		t.Fatal("a released claim stayed taken")
	}
	now = now.Add(ClaimTTL)
	if len(c.Admit(key("a"), d, runningOf())) != 1 {
		t.Fatal("an expired claim stayed taken")
	}
	c.Forget(key("a"))
	if c.Claimed(dg('a'), key("a")) {
		t.Fatal("a Scanner that is gone kept its claims")
	}
}

// TestRescanRateLimit: the cluster-wide rescan rate lets a burst of a tenth
// of a minute's rescans start, then one per interval.
func TestRescanRateLimit(t *testing.T) {
	now := t0
	c := New(func() time.Time { return now }, 0, 60, func(types.NamespacedName) {})
	started := 0
	for range 100 {
		if c.RescanDelay() == 0 {
			started++
		}
	}
	if started != 6 {
		t.Fatalf("%d rescans started at once, want a burst of 6 at 60/min", started)
	}
	d := c.RescanDelay()
	if d <= 0 || d > time.Second {
		t.Fatalf("next rescan in %v, want within a second", d)
	}
	now = now.Add(time.Second)
	if c.RescanDelay() != 0 {
		t.Fatal("no rescan a second later")
	}
}

// TestAdmitWithoutCapReadsNoRunningJobs: with no cluster-wide cap the
// running Jobs change nothing, so Admit does not read them (reading them
// visits every running scan Job of the cluster).
func TestAdmitWithoutCapReadsNoRunningJobs(t *testing.T) {
	b := New(time.Now, 0, 0, func(types.NamespacedName) {})
	got := b.Admit(key("self"), []Request{{Digest: "a", Job: key("job-a")}}, func() map[string]types.NamespacedName {
		t.Error("running Jobs read without a cap")
		return nil
	})
	if !slices.Equal(got, []string{"a"}) {
		t.Errorf("admitted %v, want [a]", got)
	}
}

// TestTurnKeepsTheFreedSlot: a Scanner given a slot keeps the slots its
// own reconciles find free for turnJobs Jobs, ahead of a Scanner that
// waited longer with as many Jobs running (which is not woken meanwhile),
// then goes to the back of the line; a turn also ends after turnTime, and
// never beats a Scanner that runs fewer Jobs.
func TestTurnKeepsTheFreedSlot(t *testing.T) {
	now := t0
	var woken []types.NamespacedName
	c := New(func() time.Time { return now }, 1, 0, func(k types.NamespacedName) { woken = append(woken, k) })
	// b waits first; a comes later. The one slot goes to b, then a's turn
	// comes only once b's is over.
	ask := func(who string, n int) []string {
		t.Helper()
		return c.Admit(key(who), claimsFor(who, n), runningOf())
	}
	end := func(who, digest string) {
		c.Release(digest, key(who)) // the cache shows its Job now, and then its end
		now = now.Add(time.Second)
	}
	if got := ask("b", 9); len(got) != 1 {
		t.Fatalf("b got %v, want the one slot", got)
	}
	if got := ask("a", 9); len(got) != 0 {
		t.Fatalf("a got %v with the cap full", got)
	}
	held := "b0"
	for i := 1; i < turnJobs; i++ {
		end("b", held)
		got := ask("b", 9-i)
		if len(got) != 1 {
			t.Fatalf("b's Job %d of its turn: got %v, want the slot its last Job freed", i+1, got)
		}
		held = got[0]
	}
	if len(woken) != 0 {
		t.Fatalf("woken %v during b's turn, want none", woken)
	}
	// b's turn is over: the slot it frees goes to a, which is woken.
	end("b", held)
	if got := ask("b", 9-turnJobs); len(got) != 0 {
		t.Fatalf("b got %v after its turn of %d Jobs, ahead of a", got, turnJobs)
	}
	if len(woken) != 1 || woken[0] != key("a") {
		t.Fatalf("woken %v, want a", woken)
	}
	got := ask("a", 9)
	if len(got) != 1 {
		t.Fatalf("a got %v, want the slot b's turn left", got)
	}
	// a's turn ends after turnTime even if it took fewer Jobs.
	now = now.Add(turnTime)
	end("a", got[0])
	if got := ask("a", 8); len(got) != 0 {
		t.Fatalf("a got %v after its turn's time, ahead of b", got)
	}

	// In its turn, a Scanner that runs a Job still yields to one that runs
	// none: cap 2, d runs d0 in its turn, e waits with nothing running.
	now = t0
	c = New(func() time.Time { return now }, 2, 0, func(types.NamespacedName) {})
	if got := c.Admit(key("d"), claimsFor("d", 2), runningOf()); len(got) != 2 {
		t.Fatalf("d got %v, want both slots", got)
	}
	c.waiting[key("d")] = waiter{want: 3, since: now, turnStart: now, turnJobs: 1}
	if got := c.Admit(key("e"), claimsFor("e", 1), runningOf("d0", "d1")); len(got) != 0 {
		t.Fatalf("e got %v with the cap full", got)
	}
	now = now.Add(time.Second)
	c.Release("d1", key("d"))
	dRuns := func() map[string]types.NamespacedName { return map[string]types.NamespacedName{"d0": key("d")} }
	if got := c.Admit(key("d"), claimsFor("d", 3)[2:], dRuns); len(got) != 0 {
		t.Fatalf("d, running d0, got %v ahead of e, which runs nothing", got)
	}
}
