package store_test

import (
	"cmp"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
)

// manyFindings builds n findings full of ties: 97 ids, 13 packages and 3
// versions repeat, so (id, package, version) is not unique and only the
// tiebreaker keeps pages apart; every fifth CVSS score is absent, which
// the severity order puts last. Description holds the index: the one
// field that tells two findings apart. Ids and packages are zero-padded
// so that Go's bytewise order is the database collation's too.
func manyFindings(n int) []report.Finding {
	fs := make([]report.Finding, n)
	for i := range fs {
		f := finding(fmt.Sprintf("CVE-2026-%04d", i%97), report.Severity(i%6), fmt.Sprintf("pkg%02d", i%13), "")
		f.Package.Version = fmt.Sprintf("1.%d", i%3)
		f.CVSSScore = score(float64(i%7) + 0.5)
		if i%5 == 0 {
			f.CVSSScore = nil
		}
		f.Description = strconv.Itoa(i)
		fs[i] = f
	}
	return fs
}

// wantOrder sorts findings as each order promises, ties broken by upload
// position (the findings' ids are assigned in that order).
func wantOrder(fs []report.Finding, order store.FindingOrder) []string {
	type row struct {
		f report.Finding
		i int
	}
	rows := make([]row, len(fs))
	for i, f := range fs {
		rows[i] = row{f, i}
	}
	cvssDescNullsLast := func(a, b *float64) int {
		if a == nil || b == nil {
			return cmp.Compare(btoi(a == nil), btoi(b == nil))
		}
		return cmp.Compare(*b, *a)
	}
	slices.SortFunc(rows, func(a, b row) int {
		var c int
		switch order {
		case store.BySeverity:
			c = cmp.Or(cmp.Compare(b.f.Severity, a.f.Severity), cvssDescNullsLast(a.f.CVSSScore, b.f.CVSSScore))
			c = cmp.Or(c, cmp.Compare(a.f.ID, b.f.ID), cmp.Compare(a.f.Package.Name, b.f.Package.Name))
		case store.ByID:
			c = cmp.Or(cmp.Compare(a.f.ID, b.f.ID), cmp.Compare(a.f.Package.Name, b.f.Package.Name),
				cmp.Compare(a.f.Package.Version, b.f.Package.Version))
		case store.ByPackage:
			c = cmp.Or(cmp.Compare(a.f.Package.Name, b.f.Package.Name), cmp.Compare(a.f.Package.Version, b.f.Package.Version),
				cmp.Compare(a.f.ID, b.f.ID))
		}
		return cmp.Or(c, cmp.Compare(a.i, b.i))
	})
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.f.Description
	}
	return out
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// pages follows a report's finding cursors to the end and returns each
// page's findings (by Description).
func pages(t *testing.T, st *store.Store, d string, q store.FindingQuery) [][]string {
	t.Helper()
	var out [][]string
	for len(out) <= 100 {
		p, err := st.GetReport(ctx(t), d, q)
		if err != nil {
			t.Fatalf("page %d of %+v: %v", len(out)+1, q, err)
		}
		var page []string
		for _, f := range p.FindingList {
			page = append(page, f.Description)
		}
		out = append(out, page)
		if p.NextCursor == "" {
			return out
		}
		q.Cursor = p.NextCursor
	}
	t.Fatal("cursor walk did not end")
	return nil
}

// A report of 1,234 findings comes in pages of 500, 500 and 234 in every
// order: each finding once, in exactly the order of one unpaged read.
func TestFindingPages(t *testing.T) {
	st, _ := open(t)
	fs := manyFindings(1234)
	put(t, st, newReport(1, "", t0, `{}`, fs...))
	for _, order := range []store.FindingOrder{store.BySeverity, store.ByID, store.ByPackage} {
		t.Run(string(order), func(t *testing.T) {
			got := pages(t, st, digest(1), store.FindingQuery{Order: order, Limit: 500})
			if sizes := []int{len(got[0]), len(got[len(got)-1]), len(got)}; !slices.Equal(sizes, []int{500, 234, 3}) || len(got[1]) != 500 {
				t.Fatalf("page sizes: %d pages, first %d, last %d; want 500/500/234", len(got), len(got[0]), len(got[len(got)-1]))
			}
			if all, want := slices.Concat(got...), wantOrder(fs, order); !slices.Equal(all, want) {
				t.Errorf("paged order differs from the promised order:\n got %v…\nwant %v…", all[:20], want[:20])
			}
			one := pages(t, st, digest(1), store.FindingQuery{Order: order, Limit: 5000})
			if len(one) != 1 || !slices.Equal(one[0], slices.Concat(got...)) {
				t.Errorf("one page of 5000 differs from the pages of 500")
			}
			// A last page that is exactly full has no cursor after it.
			if even := pages(t, st, digest(1), store.FindingQuery{Order: order, Limit: 617}); len(even) != 2 {
				t.Errorf("pages of 617: %d pages, want 2", len(even))
			}
		})
	}
	p, err := st.GetReport(ctx(t), digest(1), store.FindingQuery{Limit: 1})
	if err != nil || p.Findings != 1234 || len(p.FindingList) != 1 || p.NextCursor == "" || p.Digest != digest(1) {
		t.Fatalf("default order, limit 1: %d of %d findings, cursor %q, %v", len(p.FindingList), p.Findings, p.NextCursor, err)
	}
	put(t, st, newReport(2, "", t0, `{}`))
	if p, err := st.GetReport(ctx(t), digest(2), store.FindingQuery{Limit: 500}); err != nil || len(p.FindingList) != 0 || p.NextCursor != "" {
		t.Fatalf("report without findings: %+v, %v", p, err)
	}
}

func TestFindingCursorRejected(t *testing.T) {
	st, _ := open(t)
	put(t, st, newReport(1, "", t0, `{}`, manyFindings(3)...))
	first, err := st.GetReport(ctx(t), digest(1), store.FindingQuery{Order: store.ByID, Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	put(t, st, newReport(2, "", t0, `{}`))
	list, err := st.ListReports(ctx(t), store.ListQuery{Limit: 1})
	if err != nil || list.NextCursor == "" {
		t.Fatalf("list cursor: %+v, %v", list, err)
	}
	b64 := base64.RawURLEncoding.EncodeToString
	for name, q := range map[string]store.FindingQuery{
		"another order":  {Order: store.ByPackage, Cursor: first.NextCursor},
		"not base64":     {Cursor: "!!"},
		"not JSON":       {Cursor: b64([]byte("severity"))},
		"a list cursor":  {Cursor: list.NextCursor},
		"no id":          {Cursor: b64([]byte(`{"o":"severity","s":5}`))},
		"bad severity":   {Cursor: b64([]byte(`{"o":"severity","s":9,"i":1}`))},
		"wrong types":    {Cursor: b64([]byte(`{"o":"severity","s":"high","i":1}`))},
		"unknown order":  {Order: "cvss", Cursor: first.NextCursor},
		"extra field":    {Cursor: b64([]byte(`{"o":"severity","s":1,"i":1,"x":"y"}`))},
		"on its own sql": {Order: store.BySeverity, Cursor: b64([]byte(`{"o":"severity","s":1,"v":"'; DROP TABLE findings; --","i":1}`))},
	} {
		q.Limit = 10
		_, err := st.GetReport(ctx(t), digest(1), q)
		if name == "on its own sql" { // a well-formed cursor: its strings are parameters
			if err != nil {
				t.Errorf("%s: %v", name, err)
			}
			continue
		}
		if !errors.Is(err, store.ErrBadCursor) {
			t.Errorf("%s: %v, want ErrBadCursor", name, err)
		}
	}
	if p, err := st.GetReport(ctx(t), digest(1), store.FindingQuery{Order: store.ByID, Limit: 5, Cursor: first.NextCursor}); err != nil || len(p.FindingList) != 2 {
		t.Fatalf("the cursor itself: %+v, %v", p, err)
	}
}
