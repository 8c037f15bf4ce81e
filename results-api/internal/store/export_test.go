package store_test

import (
	"reflect"
	"slices"
	"testing"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
)

// Walking a report in small pages sees every finding once, in the ByID
// order, and every vulnerability id once, in the same order.
func TestWalkFindingsAndVulnerabilities(t *testing.T) {
	st, _ := open(t)
	fs := manyFindings(500)
	put(t, st, newReport(1, "app", t0, "{}", fs...))
	for _, page := range []int{1, 7, 1000} {
		var ids []string
		err := st.WalkFindings(ctx(t), digest(1), page, func(p []report.Finding) error {
			if len(p) > page {
				t.Fatalf("page of %d, want at most %d", len(p), page)
			}
			for _, f := range p {
				ids = append(ids, f.Description)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if want := wantOrder(fs, store.ByID); !slices.Equal(ids, want) {
			t.Errorf("page %d: %d findings, want %d in ByID order", page, len(ids), len(want))
		}
		var vulns []string
		err = st.WalkVulnerabilities(ctx(t), digest(1), page, func(p []store.VulnRule) error {
			for _, v := range p {
				vulns = append(vulns, v.ID)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(vulns) != 97 || !slices.IsSorted(vulns) || len(slices.Compact(slices.Clone(vulns))) != 97 {
			t.Errorf("page %d: %d vulnerabilities, want the 97 ids once each, sorted", page, len(vulns))
		}
	}
}

// The fleet walk pages over (digest, finding) across reports, stops at its
// limit and reads through the caller's scope.
func TestWalkFleetFindings(t *testing.T) {
	st, _ := open(t)
	for n := 1; n <= 3; n++ {
		put(t, st, newReport(n, "app", t0, "{}", manyFindings(40*n)...))
	}
	running := true
	for ns, d := range map[string]int{"a": 1, "b": 2} {
		if _, err := st.ApplyInventory(ctx(t), store.Inventory{Namespace: ns, EventID: ns, Time: t0,
			Entries: []store.InventoryEntry{{Kind: "Deployment", Name: "web", Container: "c", Digest: digest(d), Pods: 1}}}); err != nil {
			t.Fatal(err)
		}
	}
	// Every column of a walked finding is read: each equals the report's
	// own finding (keyed by digest and description, unique in manyFindings).
	stored := map[string]report.Finding{}
	for _, n := range []int{1, 2} {
		page, err := st.GetReport(ctx(t), digest(n), store.FindingQuery{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range page.FindingList {
			stored[digest(n)+f.Description] = f
		}
	}
	walk := func(q store.FleetQuery, page int, scope ...string) map[string]int {
		t.Helper()
		c := ctx(t)
		if scope != nil {
			c = store.WithScope(c, store.Scope{Namespaces: scope})
		}
		got := map[string]int{}
		seen := map[string]bool{}
		err := st.WalkFleetFindings(c, q, page, func(p []store.FleetFinding) error {
			for _, f := range p {
				key := f.Digest + f.Description
				if seen[key] {
					t.Errorf("finding %s twice", key)
				}
				seen[key] = true
				if want, ok := stored[key]; !ok || !reflect.DeepEqual(f.Finding, want) {
					t.Errorf("walked finding %s:\n%+v\nwant the stored\n%+v", key, f.Finding, want)
				}
				got[f.Digest]++
				if len(f.RunningIn) != 1 || f.RunningIn[0].Name != "web" {
					t.Errorf("%s runs in %+v", f.Digest, f.RunningIn)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	all := store.FleetQuery{ListQuery: store.ListQuery{Running: &running}, Limit: 1000}
	for _, page := range []int{3, 1000} {
		if got := walk(all, page); got[digest(1)] != 40 || got[digest(2)] != 80 || len(got) != 2 {
			t.Errorf("page %d: %v", page, got)
		}
	}
	if got := walk(store.FleetQuery{ListQuery: all.ListQuery, Limit: 50}, 7); got[digest(1)] != 40 || got[digest(2)] != 10 {
		t.Errorf("limit 50: %v", got)
	}
	if n, err := st.CountFleetFindings(ctx(t), all, 101); err != nil || n != 101 {
		t.Errorf("count up to 101 = %d, %v", n, err)
	}
	if got := walk(all, 9, "b"); len(got) != 1 || got[digest(2)] != 80 {
		t.Errorf("scoped to b: %v", got)
	}
	crit := store.FleetQuery{ListQuery: store.ListQuery{Running: &running, MinSeverity: report.Critical}, Limit: 1000}
	// manyFindings: severity i%6, so one in six is critical.
	if got := walk(crit, 4); got[digest(1)] != 6 || got[digest(2)] != 13 {
		t.Errorf("critical only: %v", got)
	}
}
