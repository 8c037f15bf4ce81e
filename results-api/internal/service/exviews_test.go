package service_test

import (
	"bytes"
	"encoding/csv"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/results-api/api"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/service"
)

// newViewsEnv is TestExceptionCounts' cluster with three exceptions:
// team-a's on CVE-2024-0001 and -0002, a cluster one on CVE-2024-0005, and
// an expired one of team-b on CVE-2024-0003. The shared image runs in
// team-a and team-b, bOnly (CVE-2024-0001) in team-b only.
func newViewsEnv(t *testing.T) (e *exceptionEnv, alice, bob, carol string) {
	e = newExceptionEnv(t)
	e.except("team-a", "parser", []string{"CVE-2024-0001", "CVE-2024-0002"}, nil)
	e.except("", "curl", []string{"CVE-2024-0005"}, nil)
	e.except("team-b", "expired", []string{"CVE-2024-0003"},
		func(s map[string]any) { s["expiresAt"] = time.Now().Add(-time.Hour).UTC().Format(time.RFC3339) })
	// Critical and high findings are past their SLA deadline.
	later := time.Now().Add(2 * time.Hour)
	e.configure = func(c *service.Config) {
		c.SLA = report.SLA{Windows: map[report.Severity]time.Duration{report.Critical: time.Hour, report.High: time.Hour}}
		c.Now = func() time.Time { return later }
	}
	e.start()
	return e, e.c.token("alice"), e.c.token("bob"), e.c.token("carol")
}

// In alice's view (team-a) CVE-2024-0001, -0002 and -0005 of the shared
// image are suppressed; in any view with team-b only CVE-2024-0005.
var (
	aliceActive = []string{"CVE-2024-0003", "CVE-2024-0004"}
	aliceHidden = []string{"CVE-2024-0001", "CVE-2024-0002", "CVE-2024-0005"}
	bobActive   = []string{"CVE-2024-0001", "CVE-2024-0002", "CVE-2024-0003", "CVE-2024-0004"}
	every       = []string{"CVE-2024-0001", "CVE-2024-0002", "CVE-2024-0003", "CVE-2024-0004", "CVE-2024-0005"}
)

// download GETs path with token and returns the 200 answer's header and body.
func (e *exceptionEnv) download(who, token, path string) (http.Header, []byte) {
	e.t.Helper()
	code, hdr, b := e.req(http.MethodGet, path, nil, nil, "Authorization", "Bearer "+token)
	if code != http.StatusOK {
		e.t.Fatalf("%s: GET %s: %d %s", who, path, code, b)
	}
	return hdr, b
}

// sarifResults returns the rule ids of a SARIF log and its results as
// vulnerability id → suppressions' justifications ("" for none).
func sarifResults(t *testing.T, b []byte) (rules []string, results map[string]string) {
	t.Helper()
	var log struct {
		Runs []struct {
			Tool struct {
				Driver struct{ Rules []struct{ ID string } }
			}
			Results []struct {
				RuleID       string
				Suppressions []struct{ Kind, Status, Justification string }
			}
		}
	}
	decode(t, b, &log)
	results = map[string]string{}
	for _, r := range log.Runs[0].Tool.Driver.Rules {
		rules = append(rules, r.ID)
	}
	for _, r := range log.Runs[0].Results {
		results[r.RuleID] = ""
		for _, s := range r.Suppressions {
			if s.Kind != "external" || s.Status != "accepted" {
				t.Errorf("result %s: suppression %+v", r.RuleID, s)
			}
			results[r.RuleID] += s.Justification
		}
	}
	slices.Sort(rules)
	return rules, results
}

// csvFindings returns a findings CSV's rows as vulnerability id → the
// suppressed_by column (digest:id for the fleet's, so that two images
// stay apart).
func csvFindings(t *testing.T, b []byte, fleet bool) map[string]string {
	t.Helper()
	rows, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil || len(rows) == 0 {
		t.Fatalf("CSV %q: %v", b, err)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	out := map[string]string{}
	for _, r := range rows[1:] {
		key := r[col["vulnerability"]]
		if fleet {
			d := r[col["digest"]]
			key = d[len(d)-4:] + ":" + key
		}
		if (r[col["suppressed"]] == "true") != (r[col["suppressed_by"]] != "") {
			t.Errorf("row %q: suppressed and suppressed_by disagree", r)
		}
		out[key] = r[col["suppressed_by"]]
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	return slices.Sorted(func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	})
}

// TestExceptionViewsExports: the SARIF and CSV exports of a report, and
// the fleet CSV, follow the caller's view as the detail does. Team-a's
// exception leaves its findings out of alice's exports and not bob's (the
// same digest), the cluster exception leaves CVE-2024-0005 out of
// everyone's, the expired one leaves nothing out; suppressed=true|all
// bring them back marked (SARIF's suppressions, the CSV's columns).
func TestExceptionViewsExports(t *testing.T) {
	e, alice, bob, carol := newViewsEnv(t)
	for _, tc := range []struct {
		who, token, query string
		want              []string // the findings in the export
		suppressed        []string // of which suppressed
	}{
		{"alice", alice, "", aliceActive, nil},
		{"alice", alice, "suppressed=true", aliceHidden, aliceHidden},
		{"alice", alice, "suppressed=all", every, aliceHidden},
		{"bob", bob, "", bobActive, nil},
		{"bob", bob, "suppressed=true", []string{"CVE-2024-0005"}, []string{"CVE-2024-0005"}},
		{"carol viewing team-a", carol, "namespace=team-a", aliceActive, nil},
		{"carol (both namespaces)", carol, "suppressed=all", every, []string{"CVE-2024-0005"}},
	} {
		_, b := e.download(tc.who, tc.token, "/api/v1/reports/"+shared+"/sarif?"+tc.query)
		rules, results := sarifResults(t, b)
		if !slices.Equal(rules, tc.want) || !slices.Equal(sortedKeys(results), tc.want) {
			t.Errorf("%s ?%s: SARIF rules %v, results %v; want %v", tc.who, tc.query, rules, sortedKeys(results), tc.want)
		}
		_, b = e.download(tc.who, tc.token, "/api/v1/reports/"+shared+"/findings.csv?"+tc.query)
		rows := csvFindings(t, b, false)
		if !slices.Equal(sortedKeys(rows), tc.want) {
			t.Errorf("%s ?%s: CSV rows %v; want %v", tc.who, tc.query, sortedKeys(rows), tc.want)
		}
		for _, id := range tc.want {
			wantBy := map[string]string{"CVE-2024-0001": "VulnerabilityException/team-a/parser", "CVE-2024-0002": "VulnerabilityException/team-a/parser",
				"CVE-2024-0005": "ClusterVulnerabilityException/curl"}[id]
			if !slices.Contains(tc.suppressed, id) {
				wantBy = ""
			}
			if rows[id] != wantBy || (wantBy == "") != (results[id] == "") || !strings.Contains(results[id], wantBy) {
				t.Errorf("%s ?%s: %s suppressed by %q in the CSV, %q in SARIF; want %q", tc.who, tc.query, id, rows[id], results[id], wantBy)
			}
		}
	}

	// The fleet CSV: its limit and X-Crowsnest-Truncated count the rows of
	// the view, not every finding.
	s, o := shared[len(shared)-4:], bOnly[len(bOnly)-4:]
	for _, tc := range []struct {
		who, token, query string
		want              []string
		truncated         bool
	}{
		{"alice", alice, "", []string{s + ":CVE-2024-0003", s + ":CVE-2024-0004"}, false},
		{"alice", alice, "limit=2", []string{s + ":CVE-2024-0003", s + ":CVE-2024-0004"}, false},
		{"alice", alice, "suppressed=true&limit=2", []string{s + ":CVE-2024-0001", s + ":CVE-2024-0002"}, true},
		{"alice", alice, "suppressed=true", []string{s + ":CVE-2024-0001", s + ":CVE-2024-0002", s + ":CVE-2024-0005"}, false},
		{"bob", bob, "", []string{o + ":CVE-2024-0001", s + ":CVE-2024-0001", s + ":CVE-2024-0002", s + ":CVE-2024-0003", s + ":CVE-2024-0004"}, false},
		{"bob", bob, "limit=5", []string{o + ":CVE-2024-0001", s + ":CVE-2024-0001", s + ":CVE-2024-0002", s + ":CVE-2024-0003", s + ":CVE-2024-0004"}, false},
		{"bob", bob, "suppressed=true", []string{s + ":CVE-2024-0005"}, false},
		{"carol viewing team-a", carol, "namespace=team-a&suppressed=all&limit=5",
			[]string{s + ":CVE-2024-0001", s + ":CVE-2024-0002", s + ":CVE-2024-0003", s + ":CVE-2024-0004", s + ":CVE-2024-0005"}, false},
	} {
		hdr, b := e.download(tc.who, tc.token, "/api/v1/findings.csv?"+tc.query)
		rows := csvFindings(t, b, true)
		got := sortedKeys(rows)
		slices.Sort(tc.want)
		if !slices.Equal(got, tc.want) || hdr.Get("X-Crowsnest-Truncated") != strconv.FormatBool(tc.truncated) {
			t.Errorf("%s ?%s: fleet CSV %v truncated %s; want %v truncated %v", tc.who, tc.query, got, hdr.Get("X-Crowsnest-Truncated"), tc.want, tc.truncated)
		}
	}
	// bob's five active rows cut at four: some four of them.
	hdr, b := e.download("bob", bob, "/api/v1/findings.csv?limit=4")
	if rows := csvFindings(t, b, true); len(rows) != 4 || hdr.Get("X-Crowsnest-Truncated") != "true" || rows[s+":CVE-2024-0005"] != "" {
		t.Errorf("bob ?limit=4: fleet CSV %v truncated %s; want 4 active rows, truncated", sortedKeys(rows), hdr.Get("X-Crowsnest-Truncated"))
	}
}

// TestExceptionViewsWorkloadsLifecycle: /workloads and /lifecycle count
// the findings active in the view of each workload's, each row's
// namespace. Team-a's exception lowers team-a's workload and lifecycle,
// not team-b's for the same digest, for alice, bob and a cluster reader
// alike; the cluster exception lowers both; the expired one neither.
func TestExceptionViewsWorkloadsLifecycle(t *testing.T) {
	e, alice, bob, carol := newViewsEnv(t)
	type wl struct {
		counts  api.SeverityCounts
		fixable int
	}
	teamA := wl{counts: sev(0, 0, 1, 1)}                   // CVE-2024-0003, -0004
	teamBShared := wl{counts: sev(0, 2, 1, 1), fixable: 1} // all but CVE-2024-0005
	teamBOnly := wl{counts: sev(0, 1, 0, 0)}
	type lc struct{ open, ages0, overdue, overdueKEV int }
	lcA := lc{open: 2, ages0: 2}
	lcB := lc{open: 5, ages0: 5, overdue: 3} // CVE-2024-0001 twice, -0002; the KEV one is suppressed
	for _, tc := range []struct {
		who, token string
		workloads  map[string]wl // namespace/name
		lifecycle  map[string]lc
	}{
		{"alice", alice, map[string]wl{"team-a/wa": teamA}, map[string]lc{"team-a": lcA}},
		{"bob", bob, map[string]wl{"team-b/wa": teamBShared, "team-b/wb": teamBOnly}, map[string]lc{"team-b": lcB}},
		{"carol", carol, map[string]wl{"team-a/wa": teamA, "team-b/wa": teamBShared, "team-b/wb": teamBOnly},
			map[string]lc{"team-a": lcA, "team-b": lcB}},
	} {
		var list api.WorkloadList
		e.getJSON(tc.who, tc.token, "/api/v1/workloads", &list)
		got := map[string]wl{}
		for _, w := range list.Items {
			got[w.Namespace+"/"+w.Name] = wl{counts: w.Counts, fixable: w.Fixable}
			if len(w.Images) != 1 || w.Images[0].Counts == nil || *w.Images[0].Counts != w.Counts || *w.Images[0].Fixable != w.Fixable {
				t.Errorf("%s: workload %s/%s: images %+v, want one with the workload's counts", tc.who, w.Namespace, w.Name, w.Images)
			}
		}
		if len(got) != len(tc.workloads) {
			t.Errorf("%s: workloads %+v, want %+v", tc.who, got, tc.workloads)
		}
		for k, want := range tc.workloads {
			if got[k] != want {
				t.Errorf("%s: workload %s: %+v, want %+v", tc.who, k, got[k], want)
			}
		}
		var l api.Lifecycle
		e.getJSON(tc.who, tc.token, "/api/v1/lifecycle", &l)
		if len(l.Namespaces) != len(tc.lifecycle) {
			t.Errorf("%s: lifecycle of %d namespaces, want %d", tc.who, len(l.Namespaces), len(tc.lifecycle))
		}
		for _, n := range l.Namespaces {
			got := lc{open: n.Open, ages0: n.Ages.D0to7, overdue: n.Overdue, overdueKEV: n.OverdueKev}
			if want := tc.lifecycle[n.Namespace]; got != want {
				t.Errorf("%s: lifecycle of %s: %+v, want %+v", tc.who, n.Namespace, got, want)
			}
		}
	}
	var l api.Lifecycle
	e.getJSON("carol", carol, "/api/v1/lifecycle?namespace=team-a", &l)
	if len(l.Namespaces) != 1 || l.Namespaces[0].Open != lcA.open {
		t.Errorf("carol ?namespace=team-a: lifecycle %+v, want team-a with %d open", l.Namespaces, lcA.open)
	}
}
