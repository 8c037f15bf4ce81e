package store_test

import (
	"errors"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/events"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
	"github.com/crowsnest-dev/crowsnest/test/support/pgtest"
)

// Only reports of digests that stopped running before the cutoff go, and
// no event is written for them (the outbox stays as it was).
func TestPruneReports(t *testing.T) {
	st, err := store.Open(ctx(t), pgtest.NewDatabase(t), store.Options{Announcer: events.Announcer{}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Now().UTC()
	old, recent := now.Add(-40*24*time.Hour), now.Add(-24*time.Hour)
	for n := 1; n <= 5; n++ {
		put(t, st, newReport(n, "img", t0, "raw", finding("CVE-1", 4, "p", "")))
	}
	// 1 stopped 40 days ago, 2 a day ago, 3 runs, 4 was never listed, 5
	// stopped 40 days ago and runs again.
	apply(t, st, inv("x", old.Add(-time.Hour), "e1", entry("Deployment", "a", "c", 1, 1), entry("Deployment", "b", "c", 5, 1)))
	apply(t, st, inv("x", old, "e2"))
	apply(t, st, inv("y", recent.Add(-time.Hour), "e3", entry("Deployment", "a", "c", 2, 1)))
	apply(t, st, inv("y", recent, "e4"))
	apply(t, st, inv("z", recent, "e5", entry("Deployment", "a", "c", 3, 1)))
	apply(t, st, inv("w", recent, "e6", entry("Deployment", "a", "c", 5, 1)))
	before, err := st.OutboxStats(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	n, err := st.PruneReports(ctx(t), now.Add(-30*24*time.Hour), 1)
	if err != nil || n != 1 {
		t.Fatalf("pruned %d, %v; want 1", n, err)
	}
	for d, want := range map[int]bool{1: false, 2: true, 3: true, 4: true, 5: true} {
		_, err := st.GetSummary(ctx(t), digest(d))
		if got := err == nil; got != want || (err != nil && !errors.Is(err, store.ErrNotFound)) {
			t.Errorf("report %d present %v (%v), want %v", d, got, err, want)
		}
	}
	after, err := st.OutboxStats(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if after.Depth != before.Depth {
		t.Errorf("outbox depth %d after pruning, want it unchanged (%d)", after.Depth, before.Depth)
	}
}
