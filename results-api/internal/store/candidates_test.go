package store

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/test/support/pgtest"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
)

// candidateStore stores n reports, each with CVE-1 (critical, KEV, on
// openssl with a fix), CVE-2 (low) and cve-3 (medium), the first two
// digests running in namespaces "a" (digest 1) and "a" and "b" (digest 2).
func candidateStore(t *testing.T, n int) (*Store, []string, time.Time) {
	t.Helper()
	ctx := t.Context()
	st, err := Open(ctx, pgtest.NewDatabase(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	digests := make([]string, n)
	for i := range digests {
		digests[i] = fmt.Sprintf("sha256:%064x", i+1)
		r := &report.Report{Raw: []byte(fmt.Sprintf(`{"n":%d}`, i)), FindingList: []report.Finding{
			{ID: "CVE-1", Severity: report.Critical, Package: report.Package{Name: "openssl", PURL: "pkg:deb/openssl@3"},
				FixedIn: []string{"3.1"}, Risk: report.Risk{KEV: true}},
			{ID: "CVE-2", Severity: report.Low, Package: report.Package{Name: "zlib", PURL: "pkg:deb/zlib@1"}},
			{ID: "cve-3", Severity: report.Medium, Package: report.Package{Name: "musl", PURL: "pkg:apk/musl@1"}},
		}}
		r.Digest, r.ScannedAt, r.StoredAt, r.Findings = digests[i], t0, t0, 3
		if _, err := st.PutReport(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	for ns, ds := range map[string][]string{"a": digests[:2], "b": digests[1:2]} {
		inv := Inventory{Namespace: ns, EventID: ns, Time: t0}
		for i, d := range ds {
			inv.Entries = append(inv.Entries, InventoryEntry{Kind: "Deployment", Name: fmt.Sprint("w", i), Container: "c", Digest: d, Pods: 1})
		}
		if _, err := st.ApplyInventory(ctx, inv); err != nil {
			t.Fatal(err)
		}
	}
	return st, digests, t0
}

// TestEachCandidate: the findings of the ids asked (case-insensitively),
// of the digests asked or all in the caller's scope, with their severity,
// fix, KEV listing, overdue state and the namespaces running their digest.
func TestEachCandidate(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, digests, t0 := candidateStore(t, 3)
	sla := criticalSLA(time.Hour)
	collect := func(ctx context.Context, q CandidateQuery) []string {
		t.Helper()
		var out []string
		err := st.EachCandidate(ctx, q, func(c *Candidate) error {
			out = append(out, fmt.Sprintf("%s %s %s fix=%t kev=%t overdue=%t in=%v", c.Digest[len(c.Digest)-1:], c.VulnID,
				c.Severity, c.Fixable(), c.KEV, c.Overdue, c.RunsIn))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		ctx  context.Context
		q    CandidateQuery
		want []string
	}{
		{"no ids", ctx, CandidateQuery{Digests: digests}, nil},
		{"no digests", ctx, CandidateQuery{VulnIDs: []string{"CVE-1"}, Digests: []string{}}, nil},
		{"ids of every report, before the deadline", ctx, CandidateQuery{VulnIDs: []string{"cve-1", "CVE-3"}, Now: t0, SLA: sla}, []string{
			"1 CVE-1 critical fix=true kev=true overdue=false in=[a]", "1 cve-3 medium fix=false kev=false overdue=false in=[a]",
			"2 CVE-1 critical fix=true kev=true overdue=false in=[a b]", "2 cve-3 medium fix=false kev=false overdue=false in=[a b]",
			"3 CVE-1 critical fix=true kev=true overdue=false in=[]", "3 cve-3 medium fix=false kev=false overdue=false in=[]"}},
		{"past the critical deadline", ctx, CandidateQuery{VulnIDs: []string{"CVE-1", "CVE-2"}, Digests: digests[1:2], Now: t0.Add(48 * time.Hour), SLA: sla},
			[]string{"2 CVE-1 critical fix=true kev=true overdue=true in=[a b]", "2 CVE-2 low fix=false kev=false overdue=false in=[a b]"}},
		// A reader of namespace b: only digest 2, whose namespaces are all
		// told (the caller intersects them with its view).
		{"scope", WithScope(ctx, Scope{Namespaces: []string{"b"}}), CandidateQuery{VulnIDs: []string{"CVE-2"}},
			[]string{"2 CVE-2 low fix=false kev=false overdue=false in=[a b]"}},
		// Namespaced ids only in the digests their namespace runs; a
		// finding both select comes once.
		{"namespaced", ctx, CandidateQuery{VulnIDs: []string{"CVE-2"}, NamespaceVulns: []NamespaceVuln{{"b", "CVE-3"}, {"a", "cve-2"}, {"z", "CVE-1"}}},
			[]string{"1 CVE-2 low fix=false kev=false overdue=false in=[a]",
				"2 CVE-2 low fix=false kev=false overdue=false in=[a b]", "2 cve-3 medium fix=false kev=false overdue=false in=[a b]",
				"3 CVE-2 low fix=false kev=false overdue=false in=[]"}},
		{"namespaced, in the digests asked", ctx, CandidateQuery{NamespaceVulns: []NamespaceVuln{{"a", "CVE-3"}}, Digests: digests[1:]},
			[]string{"2 cve-3 medium fix=false kev=false overdue=false in=[a b]"}},
		{"namespaced, in the scope", WithScope(ctx, Scope{Namespaces: []string{"b"}}), CandidateQuery{NamespaceVulns: []NamespaceVuln{{"a", "CVE-3"}}},
			[]string{"2 cve-3 medium fix=false kev=false overdue=false in=[a b]"}},
	} {
		if got := collect(tc.ctx, tc.q); !slices.Equal(got, tc.want) {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}

// criticalSLA is a policy with a critical window only.
func criticalSLA(critical time.Duration) report.SLA {
	return report.SLA{Windows: map[report.Severity]time.Duration{report.Critical: critical}}
}

// TestListPageSuppressionStatements counts the SQL statements of a report
// list page and of counting its suppressed findings: one more statement
// per page whatever its size, where deciding each report on its own
// (NamespacesOf and FindingKeys, as the report detail does) takes two per
// report.
func TestListPageSuppressionStatements(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, _, _ := candidateStore(t, 120)
	stmts := countStatements(t, st)
	for _, limit := range []int{50, 100} {
		stmts.Store(0)
		page, err := st.ListReports(ctx, ListQuery{Limit: limit, Sort: "-risk"})
		if err != nil {
			t.Fatal(err)
		}
		list := stmts.Load()
		digests := make([]string, len(page.Items))
		for i, it := range page.Items {
			digests[i] = it.Digest
		}
		stmts.Store(0)
		rows := 0
		if err := st.EachCandidate(ctx, CandidateQuery{VulnIDs: []string{"CVE-1", "CVE-2"}, Digests: digests}, func(*Candidate) error {
			rows++
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		counted := stmts.Load()
		stmts.Store(0)
		for _, d := range digests {
			if _, err := st.NamespacesOf(ctx, d); err != nil {
				t.Fatal(err)
			}
			if _, err := st.FindingKeys(ctx, d); err != nil {
				t.Fatal(err)
			}
		}
		perReport := stmts.Load()
		t.Logf("page of %d: list %d statements, + suppressed counts %d (%d candidate rows); per report instead: %d",
			limit, list, counted, rows, perReport)
		if counted != 1 || rows != 2*limit {
			t.Errorf("page of %d: suppressed counts took %d statements for %d rows, want 1 for %d", limit, counted, rows, 2*limit)
		}
	}
}
