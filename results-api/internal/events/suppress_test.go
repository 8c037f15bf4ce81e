package events_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	"github.com/crowsnest-dev/crowsnest/test/support/pgtest"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/bomtest"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/events"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/exception"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
)

// vulnReport is a report of digest d with one finding per id, each in its
// own apk package named after the id.
func vulnReport(d string, at time.Time, raw string, ids ...string) *report.Report {
	r := &report.Report{Raw: []byte(raw)}
	r.Digest, r.Image, r.ScannedAt, r.StoredAt = d, "registry.example/app@"+d, at, at
	for _, id := range ids {
		f := report.Finding{ID: id, Severity: report.Critical, Package: report.Package{Name: "pkg-" + id, Version: "1.0", Type: "apk",
			PURL: "pkg:apk/alpine/pkg-" + id + "@1.0"}}
		r.FindingList = append(r.FindingList, f)
		r.Counts.Add(f.Severity)
	}
	r.Findings = len(ids)
	return r
}

// lastChanged decodes the newest findings.changed in the outbox of digest d,
// after checking it as any consumer does.
func lastChanged(t *testing.T, dsn, d string, now time.Time) eventsv1.FindingsChanged {
	t.Helper()
	var last *outboxRow
	for _, r := range outboxRows(t, dsn) {
		if r.Subject == eventsv1.SubjectFindingsChanged && r.Digest == d {
			last = &r
		}
	}
	if last == nil {
		t.Fatalf("no findings.changed of %s in the outbox", d)
	}
	ev, err := eventsv1.Parse(last.Subject, last.Payload, now, eventsv1.DefaultMaxSkew)
	if err != nil {
		t.Fatalf("the outbox's findings.changed is not valid: %v", err)
	}
	var p eventsv1.FindingsChanged
	if err := ev.Decode(&p); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestFindingsChangedMarksSuppression: with triage exceptions, the
// findings.changed results-api writes into its outbox (real Postgres, the
// real store and announcer) marks each new finding with where it is
// suppressed at that moment. A digest runs in team-a and team-b; team-a's
// exception for CVE-X marks X suppressed in team-a only; a cluster
// exception marks W suppressed everywhere; team-a's expired exception
// (Y), team-c's exception (Z; team-c does not run the digest) and a
// team-b exception for another package (P) mark nothing, nor does the
// finding nobody decided on (V); X listed again after team-a's exception
// expired is marked nowhere. A change whose ids no exception names
// costs the PUT no statement more than without exceptions; one that a
// namespaced exception names costs one (the digest's namespaces).
func TestFindingsChangedMarksSuppression(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	now := time.Now().UTC().Truncate(time.Second)
	clock := func() time.Time { return now }
	const x, y, z, w, v, p = "CVE-2026-1001", "CVE-2026-1002", "CVE-2026-1003", "CVE-2026-1004", "CVE-2026-1005", "CVE-2026-1006"
	ex := func(kind, ns, name, id string, expires time.Time, packages ...string) *exception.Exception {
		return &exception.Exception{Ref: exception.Ref{Kind: kind, Namespace: ns, Name: name}, Created: now.Add(-time.Hour),
			Vulnerabilities: []string{id}, Packages: packages, Status: "affected", Statement: "accepted", ActionStatement: "fix ships",
			ExpiresAt: expires}
	}
	set := exception.NewSet([]*exception.Exception{
		ex(exception.KindNamespaced, "team-a", "x", x, now.Add(24*time.Hour)),
		ex(exception.KindNamespaced, "team-a", "y-expired", y, now.Add(-time.Minute)),
		ex(exception.KindNamespaced, "team-c", "z", z, now.Add(24*time.Hour)),
		ex(exception.KindCluster, "", "w", w, now.Add(24*time.Hour)),
		ex(exception.KindNamespaced, "team-b", "p-other-package", p, now.Add(24*time.Hour), "pkg:apk/alpine/openssl@*"),
	}, exception.Policy{MaxLifetime: exception.DefaultMaxLifetime, Now: clock})
	var statements atomic.Int64
	open := func(a events.Announcer) *store.Store {
		st, err := store.Open(testCtx(t, 30*time.Second), dsn, store.Options{Announcer: a,
			OnStatement: func(context.Context) { statements.Add(1) }})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		return st
	}
	plain := open(events.Announcer{Now: clock})
	st := open(events.Announcer{Now: clock, Exceptions: func() *exception.Set { return set }})
	ctx := testCtx(t, 60*time.Second)

	d, other := bomtest.Digest(1), bomtest.Digest(2)
	for i, ns := range []string{"team-a", "team-b", "team-c"} {
		runs := d
		if ns == "team-c" {
			runs = other
		}
		if _, err := st.ApplyInventory(ctx, store.Inventory{Namespace: ns, EventID: "inv-" + ns, Time: now.Add(time.Duration(i) * time.Second),
			Entries: []store.InventoryEntry{{Kind: "Deployment", Name: "web", Container: "app", Digest: runs, Image: "app:1", Pods: 1}}}); err != nil {
			t.Fatal(err)
		}
	}
	putCounted := func(st *store.Store, r *report.Report) int64 {
		t.Helper()
		before := statements.Load()
		if _, err := st.PutReport(ctx, r); err != nil {
			t.Fatalf("put %s: %v", r.Digest, err)
		}
		return statements.Load() - before
	}

	putCounted(st, vulnReport(d, now, `{"v":1}`))
	withNamespaced := putCounted(st, vulnReport(d, now, `{"v":2}`, x, y, z, w, v, p))
	got := lastChanged(t, dsn, d, now)
	if got.Baseline || len(got.New) != 6 {
		t.Fatalf("change %+v, want six new findings", got)
	}
	marks := map[string]string{}
	for _, f := range got.New {
		m := ""
		switch {
		case f.SuppressedEverywhere:
			m = "everywhere"
		case len(f.SuppressedIn) > 0:
			b, _ := json.Marshal(f.SuppressedIn)
			m = string(b)
		}
		marks[f.ID] = m
	}
	want := map[string]string{x: `["team-a"]`, y: "", z: "", w: "everywhere", v: "", p: ""}
	for id, m := range want {
		if marks[id] != m {
			t.Errorf("%s marked %q, want %q", id, marks[id], m)
		}
	}
	if x := got.New[slices.IndexFunc(got.New, func(f eventsv1.ChangedFinding) bool { return f.ID == x })]; !x.SuppressedFor("team-a") || x.SuppressedFor("team-b") {
		t.Errorf("%s: suppressed for team-a %v, for team-b %v; want true, false", x.ID, x.SuppressedFor("team-a"), x.SuppressedFor("team-b"))
	}

	// The cost on the PUT path: a change no exception names, with and
	// without exceptions, then one only a cluster exception names.
	a, b := bomtest.Digest(3), bomtest.Digest(4)
	putCounted(plain, vulnReport(a, now, `{"v":1}`))
	putCounted(st, vulnReport(b, now, `{"v":1}`))
	without := putCounted(plain, vulnReport(a, now, `{"v":2}`, v))
	unnamed := putCounted(st, vulnReport(b, now, `{"v":2}`, v))
	clusterOnly := putCounted(st, vulnReport(b, now, `{"v":3}`, v, w))
	if unnamed != without || clusterOnly != without || withNamespaced != without+1 {
		t.Errorf("statements per change: %d without exceptions, %d with none naming its ids, %d with a cluster one, %d with namespaced ones; "+
			"want the same, the same, one more", without, unnamed, clusterOnly, withNamespaced)
	}
	if f := lastChanged(t, dsn, b, now).New; len(f) != 1 || f[0].ID != w || !f[0].SuppressedEverywhere {
		t.Errorf("cluster-only change %+v, want %s suppressed everywhere", f, w)
	}

	// Once team-a's exception has expired, X listed again is marked
	// nowhere: the mark is the decision at the change's time.
	now = now.Add(25 * time.Hour)
	putCounted(st, vulnReport(d, now, `{"v":3}`, v))
	putCounted(st, vulnReport(d, now, `{"v":4}`, v, x))
	if f := lastChanged(t, dsn, d, now).New; len(f) != 1 || f[0].ID != x || f[0].SuppressedEverywhere || f[0].SuppressedIn != nil {
		t.Errorf("%s listed again after its exception expired: %+v, want it marked nowhere", x, f)
	}
}
