package bench

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/apitest"
)

// BenchmarkRiskQuery reads 10,000 seeded reports (20 findings each, 200,000
// findings; every 50th finding KEV-listed, every finding with an EPSS score,
// reports' kev and max_risk consistent with their findings) through the
// real GET handlers sorted and filtered by risk (issue 31): the fleet list
// (default sort -risk), the list of images with a KEV finding, minEpss, one
// report's findings (default sort risk) and the CVE view (images by risk).
// (Smoke mode: 500 reports of 5 findings.)
func BenchmarkRiskQuery(b *testing.B) {
	reports, perReport := 10_000, 20
	if smoke {
		reports, perReport = 500, 5
	}
	srv := apitest.Start(b)
	seed(b, srv.DatabaseURL, reports, perReport)
	digest := fmt.Sprintf("sha256:%064x", reports/2)
	execSeed(b, srv.DatabaseURL,
		// The probed digest's and CVE's findings are old enough for the
		// age and overdue filters to return some, also in the small smoke
		// data set (200 days: past every default SLA window).
		seedStmt{`UPDATE findings SET first_seen = now() - interval '200 days' WHERE digest = $1 OR vuln_id = 'CVE-2025-00042'`, []any{digest}},
		seedStmt{`UPDATE findings SET epss = (id * 7919 % 1000) / 1000.0, kev = id % 50 = 0,
  risk = LEAST(CASE WHEN id % 50 = 0 THEN 1.05 ELSE (id * 7919 % 1000) / 1000.0 END * severity / 5.0, 1) * 100,
  kev_since = CASE WHEN id % 50 = 0 THEN first_seen END`, nil},
		seedStmt{`UPDATE reports r SET kev = s.kev, max_risk = s.risk, max_epss = s.epss, risk_parsed = true
  FROM (SELECT digest, count(*) FILTER (WHERE kev) AS kev, max(risk) AS risk, max(epss) AS epss FROM findings GROUP BY digest) s
  WHERE s.digest = r.digest`, nil},
		seedStmt{"ANALYZE", nil})
	c := httpClient(1)
	get := func(path string) []byte {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		out, err := do(c, req, http.StatusOK)
		if err != nil {
			b.Fatal(err)
		}
		return out
	}
	cases := []struct{ name, path, mustContain string }{
		{"list-risk-default", "/api/v1/reports?limit=50", fmt.Sprintf(`"total":%d`, reports)},
		{"list-kev", "/api/v1/reports?limit=50&kev=true", `"items":[{`},
		{"list-minEpss-0.99", "/api/v1/reports?limit=50&minEpss=0.99", `"items":[{`},
		{"report-findings-risk", "/api/v1/reports/" + digest, `"risk":{`},
		{"report-findings-kev", "/api/v1/reports/" + digest + "?kev=true", `"findings":[`},
		{"vulnerability-by-risk", "/api/v1/vulnerabilities/CVE-2025-00042", `"images":[{`},
		// Finding lifecycle: every finding carries firstSeen, ageDays,
		// slaDue and overdue (first seen 0–199 days ago, default --sla).
		{"report-findings-overdue", "/api/v1/reports/" + digest + "?overdue=true", `"overdue":true`},
		{"report-findings-minAgeDays-90", "/api/v1/reports/" + digest + "?minAgeDays=90", `"ageDays":`},
		{"vulnerability-overdue", "/api/v1/vulnerabilities/CVE-2025-00042?overdue=true", `"overdue":true`},
		{"stats-overdue", "/api/v1/stats", `"overdue":`},
		{"lifecycle", "/api/v1/lifecycle", `"namespaces":`},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			lat := make([]time.Duration, b.N)
			b.ResetTimer()
			for i := range b.N {
				t0 := time.Now()
				out := get(tc.path)
				lat[i] = time.Since(t0)
				if i == 0 && !strings.Contains(string(out), tc.mustContain) {
					b.Fatalf("GET %s: %.300s lacks %s", tc.path, out, tc.mustContain)
				}
			}
			b.StopTimer()
			b.ReportMetric(ms(p99(lat)), "p99-ms")
		})
	}
}
