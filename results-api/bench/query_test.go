package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/apitest"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/bomtest"
)

// BenchmarkLookup is the operator's batch lookup: 1,000 digests (500 with a
// report, 500 without) against 50,000 stored reports, through the real
// POST /api/v1/reports/lookup handler. (Smoke mode: 100 of 500.)
func BenchmarkLookup(b *testing.B) {
	stored, hits, stride := 50_000, 500, 97
	if smoke {
		stored, hits, stride = 500, 50, 7
	}
	srv := apitest.Start(b)
	seed(b, srv.DatabaseURL, stored, 0)
	digests := make([]string, 0, 2*hits)
	for i := range hits {
		digests = append(digests, bomtest.Digest(1+i*stride), bomtest.Digest(100_000+i))
	}
	body, _ := json.Marshal(map[string]any{"digests": digests})
	c := httpClient(1)
	b.Run(fmt.Sprintf("%d-of-%d", len(digests), stored), func(b *testing.B) {
		lat := make([]time.Duration, b.N)
		b.ResetTimer()
		for i := range b.N {
			req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/v1/reports/lookup", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			t0 := time.Now()
			out, err := do(c, req, http.StatusOK)
			lat[i] = time.Since(t0)
			if err != nil {
				b.Fatal(err)
			}
			if i == 0 {
				var res struct{ Reports []struct{ Digest string } }
				if err := json.Unmarshal(out, &res); err != nil || len(res.Reports) != hits {
					b.Fatalf("lookup found %d reports (err %v), want %d", len(res.Reports), err, hits)
				}
			}
		}
		b.StopTimer()
		b.ReportMetric(ms(p99(lat)), "p99-ms")
	})
}

// BenchmarkQuery reads 5,000 seeded reports (20 findings each) through the
// real GET handlers: the first list page, a page deep in the cursor chain,
// "images with a critical CVE" (minSeverity=critical), free text on a CVE
// id, and the images carrying one vulnerability. (Smoke mode: 500 reports
// of 5 findings, cursor 5 pages deep.)
func BenchmarkQuery(b *testing.B) {
	reports, perReport, pages := 5_000, 20, 50
	if smoke {
		reports, perReport, pages = 500, 5, 5
	}
	srv := apitest.Start(b)
	seed(b, srv.DatabaseURL, reports, perReport)
	c := httpClient(1)
	get := func(path string) []byte {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		out, err := do(c, req, http.StatusOK)
		if err != nil {
			b.Fatal(err)
		}
		return out
	}
	type page struct {
		Items      []struct{ Digest string }
		NextCursor string
		Total      int
	}
	var p page
	for range pages { // walk to page pages+1 (full size: page 51, items 2,501–2,550)
		path := "/api/v1/reports?limit=50"
		if p.NextCursor != "" {
			path += "&cursor=" + p.NextCursor
		}
		if err := json.Unmarshal(get(path), &p); err != nil || p.Total != reports || len(p.Items) != 50 {
			b.Fatalf("list: total %d, %d items, err %v", p.Total, len(p.Items), err)
		}
	}
	total := fmt.Sprintf(`"total":%d`, reports)
	cases := []struct{ name, path, mustContain string }{
		{"list-page50", "/api/v1/reports?limit=50", total},
		{"list-page50-deep-cursor", "/api/v1/reports?limit=50&cursor=" + p.NextCursor, total},
		{"list-sort-critical", "/api/v1/reports?limit=50&sort=-critical", total},
		{"minSeverity-critical", "/api/v1/reports?limit=50&minSeverity=critical", fmt.Sprintf(`"total":%d`, reports/10)},
		{"q-cve-id", "/api/v1/reports?limit=50&q=CVE-2025-00042", `"items":[{`},
		{"vulnerability", "/api/v1/vulnerabilities/CVE-2025-00042", `"images":[{`},
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
