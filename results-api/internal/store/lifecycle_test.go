package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
)

const day = report.Day

// testSLA is critical 7 days, high 30, medium 90, KEV 14 days from listing.
var testSLA = report.SLA{Windows: map[report.Severity]time.Duration{report.Critical: 7 * day, report.High: 30 * day,
	report.Medium: 90 * day}, KEV: 14 * day}

// stored builds a report of digest 1 stored exactly at at.
func stored(at time.Time, raw string, fs ...report.Finding) *report.Report {
	r := newReport(1, "app:1", at.Add(-time.Minute), raw, fs...)
	r.StoredAt = at
	return r
}

func kev(f report.Finding) report.Finding { f.Risk.KEV = true; return f }

// seenOf returns digest 1's findings by id, read through GetReport with q.
func seenOf(t *testing.T, st *store.Store, q store.FindingQuery) map[string]report.Finding {
	t.Helper()
	q.Limit = 100
	page, err := st.GetReport(ctx(t), digest(1), q)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]report.Finding{}
	for _, f := range page.FindingList {
		out[f.ID] = f
	}
	return out
}

func lifecycleOf(t *testing.T, st *store.Store) map[string]store.LifecycleEntry {
	t.Helper()
	es, err := st.FindingLifecycle(ctx(t), digest(1))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]store.LifecycleEntry{}
	for _, e := range es {
		out[e.ID] = e
	}
	return out
}

// TestFindingLifecycleOverReports walks one digest through four reports
// with known store times: first seen, age, SLA deadlines and the overdue
// filter, resolved at when a report drops a finding, and a finding that
// comes back open again with its first sighting kept.
func TestFindingLifecycleOverReports(t *testing.T) {
	st, _ := open(t)
	crit := finding("CVE-CRIT", report.Critical, "openssl", "3.1")
	high := finding("CVE-HIGH", report.High, "zlib", "")
	med := finding("CVE-MED", report.Medium, "musl", "")

	put(t, st, stored(t0, "r1", crit, high))
	put(t, st, stored(t0.Add(10*day), "r2", crit, kev(med))) // high resolved, med new and KEV-listed

	fs := seenOf(t, st, store.FindingQuery{})
	if got := fs["CVE-CRIT"].Seen.FirstSeen; !got.Equal(t0) {
		t.Errorf("critical first seen %v, want %v (the first report)", got, t0)
	}
	if got := fs["CVE-MED"].Seen; !got.FirstSeen.Equal(t0.Add(10*day)) || !got.KEVSince.Equal(t0.Add(10*day)) {
		t.Errorf("medium seen %+v, want first seen and KEV since the second report", got)
	}
	lc := lifecycleOf(t, st)
	if got := lc["CVE-HIGH"].ResolvedAt; !got.Equal(t0.Add(10 * day)) {
		t.Errorf("high resolved at %v, want the second report's store time", got)
	}

	now := t0.Add(20 * day)
	if due, _ := testSLA.Due(fs["CVE-MED"]); !due.Equal(t0.Add(24 * day)) {
		t.Errorf("KEV-listed medium due %v, want KEV listing + 14d (before medium's 90 days)", due)
	}
	if n := report.AgeDays(fs["CVE-CRIT"], now); n != 20 {
		t.Errorf("critical age %d days at day 20, want 20", n)
	}
	overdue := seenOf(t, st, store.FindingQuery{Age: store.AgeFilter{Now: now, SLA: testSLA, Overdue: true}})
	if len(overdue) != 1 || overdue["CVE-CRIT"].ID == "" {
		t.Errorf("overdue at day 20: %v, want only the critical (due day 7)", idsOf(overdue))
	}
	later := seenOf(t, st, store.FindingQuery{Age: store.AgeFilter{Now: t0.Add(25 * day), SLA: testSLA, Overdue: true}})
	if len(later) != 2 || later["CVE-MED"].ID == "" {
		t.Errorf("overdue at day 25: %v, want the critical and the KEV-listed medium (due day 24)", idsOf(later))
	}
	old := seenOf(t, st, store.FindingQuery{Age: store.AgeFilter{Now: now, MinAgeDays: 15}})
	if len(old) != 1 || old["CVE-CRIT"].ID == "" {
		t.Errorf("minAgeDays 15 at day 20: %v, want the critical only", idsOf(old))
	}

	// The high comes back at day 30: open again, first seen kept.
	put(t, st, stored(t0.Add(30*day), "r3", crit, high, kev(med)))
	lc = lifecycleOf(t, st)
	if e := lc["CVE-HIGH"]; !e.ResolvedAt.IsZero() || !e.Seen.FirstSeen.Equal(t0) {
		t.Errorf("high after it came back: %+v, want open, first seen %v", e, t0)
	}
	if got := seenOf(t, st, store.FindingQuery{})["CVE-HIGH"].Seen.FirstSeen; !got.Equal(t0) {
		t.Errorf("high's findings row first seen %v, want %v", got, t0)
	}
	if got := seenOf(t, st, store.FindingQuery{})["CVE-MED"].Seen.KEVSince; !got.Equal(t0.Add(10 * day)) {
		t.Errorf("medium KEV since %v after a third report, want kept at day 10", got)
	}

	// A re-match that drops the critical resolves it at its store time.
	put(t, st, stored(t0.Add(31*day), "r4", high, kev(med)))
	if got := lifecycleOf(t, st)["CVE-CRIT"].ResolvedAt; !got.Equal(t0.Add(31 * day)) {
		t.Errorf("critical resolved at %v, want day 31", got)
	}
}

// TestNamespaceLifecycles checks the age buckets, overdue counts and mean
// time to fix of a namespace's running images, and that a scoped reader
// sees only its namespaces.
func TestNamespaceLifecycles(t *testing.T) {
	st, _ := open(t)
	crit := finding("CVE-CRIT", report.Critical, "openssl", "3.1")
	high := finding("CVE-HIGH", report.High, "zlib", "")
	med := finding("CVE-MED", report.Medium, "musl", "")
	low := finding("CVE-LOW", report.Low, "busybox", "")
	put(t, st, stored(t0, "r1", crit, high, low))
	put(t, st, stored(t0.Add(60*day), "r2", crit, kev(med), low)) // high fixed after 60 days
	put(t, st, stored(t0.Add(95*day), "r3", kev(med), low))       // critical fixed after 95 days
	apply(t, st, inv("team-a", t0, "a1", entry("Deployment", "app", "app", 1, 1)))
	apply(t, st, inv("team-b", t0, "b1", entry("Deployment", "other", "app", 2, 1)))

	now := t0.Add(100 * day)
	got, err := st.NamespaceLifecycles(ctx(t), store.LifecycleQuery{Now: now, SLA: testSLA})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Namespace != "team-a" || got[1].Namespace != "team-b" {
		t.Fatalf("namespaces %+v, want team-a and team-b", got)
	}
	a := got[0]
	// med: 40 days old (31–90), KEV since day 60, overdue (day 74);
	// low: 100 days (> 90), no low window: not overdue.
	if a.Open != 2 || a.Ages != [4]int{0, 0, 1, 1} || a.Overdue != 1 || a.OverdueKEV != 1 {
		t.Errorf("team-a %+v, want 2 open aged [0 0 1 1], 1 overdue, KEV", a)
	}
	if a.Fixed30 != 1 || a.MTTF30 != 95*day || a.Fixed90 != 2 || a.MTTF90 != (60+95)*day/2 {
		t.Errorf("team-a fixed %d in 30d (mean %v), %d in 90d (mean %v); want 1 (95d), 2 (77.5d)",
			a.Fixed30, a.MTTF30, a.Fixed90, a.MTTF90)
	}
	if b := got[1]; b.Open != 0 || b.Fixed90 != 0 {
		t.Errorf("team-b (its image has no report) %+v, want nothing", b)
	}

	// A reader of team-b asking for team-a's figures gets nothing.
	scoped := store.WithScope(ctx(t), store.Scope{Namespaces: []string{"team-b"}})
	for _, ns := range []string{"", "team-a"} {
		got, err := st.NamespaceLifecycles(scoped, store.LifecycleQuery{Now: now, SLA: testSLA, Namespace: ns})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range got {
			if n.Namespace != "team-b" {
				t.Errorf("team-b's reader (namespace %q) sees %+v", ns, n)
			}
		}
	}
	stats, err := st.Stats(scoped, now, testSLA)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Overdue != 0 {
		t.Errorf("team-b's reader counts %d overdue findings of team-a", stats.Overdue)
	}
	if stats, err = st.Stats(context.WithoutCancel(ctx(t)), now, testSLA); err != nil || stats.Overdue != 1 || stats.OverdueKEV != 1 {
		t.Errorf("cluster stats %+v, %v: want 1 overdue, KEV", stats, err)
	}
	vs, err := st.VulnStats(ctx(t), store.VulnStatsQuery{TopLimit: 5, Now: now, SLA: testSLA})
	if err != nil {
		t.Fatal(err)
	}
	if len(vs.Overdue) != 1 || vs.Overdue[0].Namespace != "team-a" || vs.Overdue[0].Counts.Medium != 1 || vs.Overdue[0].KEV != 1 {
		t.Errorf("overdue metrics %+v, want team-a: 1 medium, KEV", vs.Overdue)
	}
}

func idsOf(m map[string]report.Finding) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
