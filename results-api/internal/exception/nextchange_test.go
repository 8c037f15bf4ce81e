package exception

import (
	"testing"
	"time"
)

// NextChange is the first expiry after a time, which is when Decide's
// answer may change by the clock alone; imported statements never expire.
// Every Set has a generation of its own, later Sets higher ones.
func TestNextChangeAndGeneration(t *testing.T) {
	now := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	clock := now
	at := func(d time.Duration) *Exception {
		return &Exception{Ref: Ref{Kind: KindCluster, Name: d.String()}, Created: now.Add(-time.Hour),
			Vulnerabilities: []string{"CVE-1"}, Status: "not_affected", ExpiresAt: now.Add(d)}
	}
	vex := &Exception{Ref: Ref{Kind: KindCluster, Name: "vex"}, Vulnerabilities: []string{"CVE-1"}, Status: "not_affected",
		VEX: &Provenance{Timestamp: now}}
	set := NewSet([]*Exception{at(3 * time.Hour), at(-time.Hour), at(time.Hour), vex},
		Policy{Now: func() time.Time { return clock }})
	for _, tc := range []struct {
		after time.Time
		want  time.Time
	}{
		{now, now.Add(time.Hour)},
		{now.Add(time.Hour), now.Add(3 * time.Hour)}, // expired at its instant: the next one
		{now.Add(3 * time.Hour), time.Time{}},
	} {
		if got := set.NextChange(tc.after); !got.Equal(tc.want) {
			t.Errorf("NextChange(%s) = %s, want %s", tc.after, got, tc.want)
		}
	}
	f := Finding{Digest: "sha256:1", VulnID: "CVE-1"}
	for _, tc := range []struct {
		clock time.Time
		want  string
	}{{now, "1h0m0s"}, {now.Add(time.Hour), "3h0m0s"}, {now.Add(3 * time.Hour), "vex"}} {
		clock = tc.clock
		if e := set.Decide(f, nil); e == nil || e.Name != tc.want {
			t.Errorf("at %s: decided by %v, want %s", tc.clock, e, tc.want)
		}
	}
	if !set.Now().Equal(clock) {
		t.Errorf("Now = %s, want the policy's clock %s", set.Now(), clock)
	}
	later := NewSet(nil, Policy{})
	if set.Generation() == 0 || later.Generation() <= set.Generation() || (*Set)(nil).Generation() != 0 {
		t.Errorf("generations %d then %d (nil: %d): want positive and increasing", set.Generation(), later.Generation(), (*Set)(nil).Generation())
	}
}
