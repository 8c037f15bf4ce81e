package service_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/results-api/api"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/service"
)

// counted is what a report's counts should say in one view.
type counted struct {
	counts                 api.SeverityCounts
	findings, fixable, kev int
	suppressed             api.SuppressedCounts
}

// sev builds severity counts: critical, high, medium, low.
func sev(c, h, m, l int) api.SeverityCounts {
	return api.SeverityCounts{Critical: c, High: h, Medium: m, Low: l}
}

// TestExceptionCounts plays the same two teams as TestExceptionsPerTenant,
// with their own tokens and real RBAC, and checks the COUNTS each sees
// (report list, report detail, stats, CVE view), not only the lists of
// findings. The shared image (critical KEV CVE-2024-0005, high
// CVE-2024-0001, high fixable CVE-2024-0002, medium CVE-2024-0003, low
// CVE-2024-0004) runs in team-a and team-b; bOnly (high CVE-2024-0001) in
// team-b only. Every critical and high finding is past its SLA deadline.
//
//   - team-a's exception (CVE-2024-0001, CVE-2024-0002) lowers alice's
//     counts and leaves bob's unchanged, and a cluster reader's too (the
//     image also runs in team-b, which has no such exception);
//   - the cluster exception (CVE-2024-0005) lowers everyone's;
//   - the expired exceptions (team-a's on CVE-2024-0003, a cluster one on
//     CVE-2024-0004) lower nothing.
func TestExceptionCounts(t *testing.T) {
	e := newExceptionEnv(t)
	later := time.Now().Add(2 * time.Hour)
	e.configure = func(c *service.Config) {
		c.SLA = report.SLA{Windows: map[report.Severity]time.Duration{report.Critical: time.Hour, report.High: time.Hour}}
		c.Now = func() time.Time { return later }
	}
	expired := func(s map[string]any) { s["expiresAt"] = time.Now().Add(-time.Hour).UTC().Format(time.RFC3339) }
	e.except("team-a", "parser", []string{"CVE-2024-0001", "CVE-2024-0002"}, nil)
	e.except("", "curl", []string{"CVE-2024-0005"}, nil)
	e.except("team-a", "expired", []string{"CVE-2024-0003"}, expired)
	e.except("", "expired-low", []string{"CVE-2024-0004"}, expired)
	e.start()
	alice, bob, carol := e.c.token("alice"), e.c.token("bob"), e.c.token("carol")

	// In alice's view CVE-2024-0001, -0002 and -0005 are suppressed; in any
	// view with team-b only CVE-2024-0005.
	aliceShared := counted{counts: sev(0, 0, 1, 1), findings: 2,
		suppressed: api.SuppressedCounts{Findings: 3, Counts: sev(1, 2, 0, 0), Fixable: 1, Kev: 1}}
	bobShared := counted{counts: sev(0, 2, 1, 1), findings: 4, fixable: 1,
		suppressed: api.SuppressedCounts{Findings: 1, Counts: sev(1, 0, 0, 0), Kev: 1}}
	bOnlyAll := counted{counts: sev(0, 1, 0, 0), findings: 1}
	for _, tc := range []struct {
		who, token, query string
		want              map[string]counted
	}{
		{"alice (team-a)", alice, "", map[string]counted{shared: aliceShared}},
		{"bob (team-b)", bob, "", map[string]counted{shared: bobShared, bOnly: bOnlyAll}},
		{"carol (cluster reader, both namespaces)", carol, "", map[string]counted{shared: bobShared, bOnly: bOnlyAll}},
		{"carol viewing team-a", carol, "namespace=team-a", map[string]counted{shared: aliceShared}},
	} {
		var list api.ReportList
		e.getJSON(tc.who, tc.token, "/api/v1/reports?"+tc.query, &list)
		if len(list.Items) != len(tc.want) {
			t.Errorf("%s: list of %d reports, want %d", tc.who, len(list.Items), len(tc.want))
		}
		for _, it := range list.Items {
			want := tc.want[it.Digest]
			if it.Counts != want.counts || it.Findings != want.findings || it.Fixable != want.fixable || it.Kev != want.kev ||
				it.Suppressed == nil || *it.Suppressed != want.suppressed {
				t.Errorf("%s: list counts %s: %+v findings %d fixable %d kev %d suppressed %+v;\nwant %+v", tc.who, it.Digest[:12],
					it.Counts, it.Findings, it.Fixable, it.Kev, it.Suppressed, want)
			}
		}
		var d api.ReportDetail
		e.getJSON(tc.who, tc.token, "/api/v1/reports/"+shared+"?"+tc.query, &d)
		want := tc.want[shared]
		if d.Counts != want.counts || d.Fixable != want.fixable || d.Kev != want.kev || d.Suppressed != want.suppressed ||
			d.ActiveFindings != want.findings || d.FindingCount != 5 {
			t.Errorf("%s: detail counts %+v fixable %d kev %d active %d suppressed %+v; want %+v", tc.who, d.Counts, d.Fixable, d.Kev,
				d.ActiveFindings, d.Suppressed, want)
		}
	}

	for _, tc := range []struct {
		who, token string
		want       api.Stats // the counts only
		top        map[string][2]int
	}{
		{"alice (team-a)", alice, api.Stats{Images: 1, Findings: 2, Counts: sev(0, 0, 1, 1),
			Suppressed: api.SuppressedStats{Findings: 3, Counts: sev(1, 2, 0, 0), Fixable: 1, KevRunning: 1, Overdue: 3, OverdueKev: 1}},
			map[string][2]int{"CVE-2024-0005": {0, 1}, "CVE-2024-0001": {0, 1}, "CVE-2024-0002": {0, 1}, "CVE-2024-0003": {1, 0}}},
		{"bob (team-b)", bob, api.Stats{Images: 2, Findings: 5, Fixable: 1, Overdue: 3, Counts: sev(0, 3, 1, 1),
			Suppressed: api.SuppressedStats{Findings: 1, Counts: sev(1, 0, 0, 0), KevRunning: 1, Overdue: 1, OverdueKev: 1}},
			map[string][2]int{"CVE-2024-0005": {0, 1}, "CVE-2024-0001": {2, 0}, "CVE-2024-0002": {1, 0}}},
		{"carol (cluster reader)", carol, api.Stats{Images: 2, Findings: 5, Fixable: 1, Overdue: 3, Counts: sev(0, 3, 1, 1),
			Suppressed: api.SuppressedStats{Findings: 1, Counts: sev(1, 0, 0, 0), KevRunning: 1, Overdue: 1, OverdueKev: 1}},
			map[string][2]int{"CVE-2024-0005": {0, 1}, "CVE-2024-0001": {2, 0}}},
	} {
		var st api.Stats
		e.getJSON(tc.who, tc.token, "/api/v1/stats", &st)
		got, w := st, tc.want
		if got.Images != w.Images || got.Findings != w.Findings || got.Fixable != w.Fixable || got.KevRunning != w.KevRunning ||
			got.Overdue != w.Overdue || got.OverdueKev != w.OverdueKev || got.Counts != w.Counts || got.Suppressed != w.Suppressed {
			t.Errorf("%s: stats images %d findings %d fixable %d kevRunning %d overdue %d overdueKev %d counts %+v suppressed %+v;\nwant %+v",
				tc.who, got.Images, got.Findings, got.Fixable, got.KevRunning, got.Overdue, got.OverdueKev, got.Counts, got.Suppressed, w)
		}
		top := map[string][2]int{}
		for _, v := range st.TopVulnerabilities {
			top[v.Id] = [2]int{v.Images, v.SuppressedImages}
		}
		for id, want := range tc.top {
			if top[id] != want {
				t.Errorf("%s: top vulnerability %s: %d images active, %d suppressed; want %v", tc.who, id, top[id][0], top[id][1], want)
			}
		}
		for _, im := range st.TopImages {
			if im.Suppressed == nil || im.Findings+im.Suppressed.Findings != map[string]int{shared: 5, bOnly: 1}[im.Digest] {
				t.Errorf("%s: top image %s: %d active findings, suppressed %+v", tc.who, im.Digest[:12], im.Findings, im.Suppressed)
			}
		}
	}

	// The CVE view counts affected images the same way.
	for _, tc := range []struct {
		who, token, id     string
		active, suppressed int
	}{
		{"alice", alice, "CVE-2024-0005", 0, 1},
		{"bob", bob, "CVE-2024-0005", 0, 1},
		{"alice", alice, "CVE-2024-0002", 0, 1},
		{"bob", bob, "CVE-2024-0002", 1, 0},
		{"carol", carol, "CVE-2024-0001", 2, 0},
		{"alice", alice, "CVE-2024-0003", 1, 0}, // expired
		{"bob", bob, "CVE-2024-0004", 1, 0},     // expired
	} {
		var v api.Vulnerability
		e.getJSON(tc.who, tc.token, "/api/v1/vulnerabilities/"+tc.id, &v)
		if v.ActiveImages != tc.active || v.SuppressedImages != tc.suppressed {
			t.Errorf("%s: CVE view of %s: %d active, %d suppressed; want %d, %d", tc.who, tc.id, v.ActiveImages, v.SuppressedImages,
				tc.active, tc.suppressed)
		}
	}
}

// getJSON GETs path with token and decodes the 200 answer into v.
func (e *exceptionEnv) getJSON(who, token, path string, v any) {
	e.t.Helper()
	code, b := e.get(path, "Authorization", "Bearer "+token)
	if code != http.StatusOK {
		e.t.Fatalf("%s: GET %s: %d %s", who, path, code, b)
	}
	decode(e.t, b, v)
}
