package store_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
)

// seedList stores 23 reports: report i has i%4 critical findings, i%3 high
// (fixable when i is even), is scanned at t0+i minutes and has image
// reg/team<i%2>/app<i>; reports 5 and 17 carry CVE-2026-0001.
func seedList(t *testing.T, st *store.Store) {
	for i := 1; i <= 23; i++ {
		var fs []report.Finding
		for k := range i % 4 {
			fs = append(fs, finding(fmt.Sprintf("CVE-C-%d", k), report.Critical, fmt.Sprintf("c%d", k), ""))
		}
		for k := range i % 3 {
			fix := ""
			if i%2 == 0 {
				fix = "9.9"
			}
			fs = append(fs, finding(fmt.Sprintf("CVE-H-%d", k), report.High, fmt.Sprintf("h%d", k), fix))
		}
		if i == 5 || i == 17 {
			fs = append(fs, finding("CVE-2026-0001", report.Low, "shared", ""))
		}
		put(t, st, newReport(i, fmt.Sprintf("reg/team%d/app%d@%s", i%2, i, digest(i)), t0.Add(time.Duration(i)*time.Minute), "{}", fs...))
	}
}

// walk follows cursors through every page and returns the digests in order.
func walk(t *testing.T, st *store.Store, q store.ListQuery) ([]report.Summary, int64) {
	t.Helper()
	var all []report.Summary
	var total int64
	for pages := 0; ; pages++ {
		if pages > 50 {
			t.Fatal("cursor walk did not end")
		}
		p, err := st.ListReports(ctx(t), q)
		if err != nil {
			t.Fatalf("list %+v: %v", q, err)
		}
		if len(p.Items) > q.Limit {
			t.Fatalf("page of %d items, limit %d", len(p.Items), q.Limit)
		}
		all, total = append(all, p.Items...), p.Total
		if p.NextCursor == "" {
			return all, total
		}
		q.Cursor = p.NextCursor
	}
}

func TestListSortAndCursor(t *testing.T) {
	st, _ := open(t)
	seedList(t, st)
	key := map[string]func(report.Summary) string{
		"critical":  func(s report.Summary) string { return fmt.Sprintf("%09d", s.Counts.Critical) },
		"high":      func(s report.Summary) string { return fmt.Sprintf("%09d", s.Counts.High) },
		"medium":    func(s report.Summary) string { return fmt.Sprintf("%09d", s.Counts.Medium) },
		"low":       func(s report.Summary) string { return fmt.Sprintf("%09d", s.Counts.Low) },
		"scannedAt": func(s report.Summary) string { return s.ScannedAt.Format(time.RFC3339Nano) },
		"image":     func(s report.Summary) string { return s.Image },
	}
	for field, k := range key {
		for _, sort := range []string{field, "-" + field} {
			items, total := walk(t, st, store.ListQuery{Limit: 4, Sort: sort})
			if total != 23 || len(items) != 23 {
				t.Fatalf("sort %s: %d items, total %d", sort, len(items), total)
			}
			seen := map[string]bool{}
			for i, s := range items {
				if seen[s.Digest] {
					t.Fatalf("sort %s: %s twice", sort, s.Digest)
				}
				seen[s.Digest] = true
				if i == 0 {
					continue
				}
				a, b := k(items[i-1])+items[i-1].Digest, k(s)+s.Digest
				if (sort[0] == '-') != (a > b) {
					t.Fatalf("sort %s: %q before %q", sort, a, b)
				}
			}
		}
	}
	// Default: newest scan first.
	p, err := st.ListReports(ctx(t), store.ListQuery{Limit: 1})
	if err != nil || p.Items[0].Digest != digest(23) {
		t.Fatalf("default sort: %+v, %v", p, err)
	}
}

func TestListFilters(t *testing.T) {
	st, _ := open(t)
	seedList(t, st)
	digests := func(q store.ListQuery) []string {
		q.Limit = 5
		items, total := walk(t, st, q)
		if int(total) != len(items) {
			t.Fatalf("%+v: total %d, walked %d", q, total, len(items))
		}
		var out []string
		for _, s := range items {
			out = append(out, s.Digest)
		}
		slices.Sort(out)
		return out
	}
	want := func(pred func(i int) bool) []string {
		var out []string
		for i := 1; i <= 23; i++ {
			if pred(i) {
				out = append(out, digest(i))
			}
		}
		slices.Sort(out)
		return out
	}
	cases := []struct {
		q    store.ListQuery
		pred func(int) bool
	}{
		{store.ListQuery{MinSeverity: report.Critical}, func(i int) bool { return i%4 > 0 }},
		{store.ListQuery{MinSeverity: report.High}, func(i int) bool { return i%4 > 0 || i%3 > 0 }},
		{store.ListQuery{MinSeverity: report.Low}, func(i int) bool { return i%4 > 0 || i%3 > 0 || i == 5 || i == 17 }},
		{store.ListQuery{FixableOnly: true}, func(i int) bool { return i%2 == 0 && i%3 > 0 }},
		{store.ListQuery{Text: "TEAM1/"}, func(i int) bool { return i%2 == 1 }},
		{store.ListQuery{Text: "cve-2026-0001"}, func(i int) bool { return i == 5 || i == 17 }},
		{store.ListQuery{Text: "app1", MinSeverity: report.Critical}, func(i int) bool {
			return strings.Contains(fmt.Sprintf("app%d@", i), "app1") && i%4 > 0
		}},
		{store.ListQuery{Text: "%"}, func(int) bool { return false }}, // LIKE wildcards are literal
	}
	for _, c := range cases {
		if got, w := digests(c.q), want(c.pred); !slices.Equal(got, w) {
			t.Errorf("%+v: got %d digests %v, want %d", c.q, len(got), got, len(w))
		}
	}
}

func TestListBadCursor(t *testing.T) {
	st, _ := open(t)
	seedList(t, st)
	p, err := st.ListReports(ctx(t), store.ListQuery{Limit: 2, Sort: "critical"})
	if err != nil {
		t.Fatal(err)
	}
	for name, q := range map[string]store.ListQuery{
		"garbage":    {Limit: 2, Cursor: "not-a-cursor!"},
		"other sort": {Limit: 2, Sort: "high", Cursor: p.NextCursor},
		"bad sort":   {Limit: 2, Sort: "digest"},
	} {
		if _, err := st.ListReports(ctx(t), q); !errors.Is(err, store.ErrBadCursor) {
			t.Errorf("%s: %v, want ErrBadCursor", name, err)
		}
	}
}

func TestVulnerability(t *testing.T) {
	st, _ := open(t)
	seedList(t, st)
	v, err := st.GetVulnerability(ctx(t), "cve-2026-0001", store.AgeFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if v.ID != "CVE-2026-0001" || v.Severity != report.Low || len(v.Images) != 2 || v.Images[0].Package != "shared" {
		t.Fatalf("vulnerability = %+v", v)
	}
	if _, err := st.GetVulnerability(ctx(t), "CVE-NONE", store.AgeFilter{}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown id: %v", err)
	}
}
