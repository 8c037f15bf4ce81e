package bench

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/results-api/apitest"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/bomtest"
)

// BenchmarkLookup is the operator's batch lookup: 1,000 digests (500 with a
// report, 500 without) against 50,000 stored reports, through the real
// POST /api/v1/reports/lookup handler.
func BenchmarkLookup(b *testing.B) {
	srv := apitest.Start(b)
	seed(b, srv.DatabaseURL, 50_000, 0)
	digests := make([]string, 0, 1000)
	for i := range 500 {
		digests = append(digests, bomtest.Digest(1+i*97), bomtest.Digest(100_000+i))
	}
	body, _ := json.Marshal(map[string]any{"digests": digests})
	c := httpClient(1)
	b.Run("1000-of-50000", func(b *testing.B) {
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
				if err := json.Unmarshal(out, &res); err != nil || len(res.Reports) != 500 {
					b.Fatalf("lookup found %d reports (err %v), want 500", len(res.Reports), err)
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
// id, and the images carrying one vulnerability.
func BenchmarkQuery(b *testing.B) {
	srv := apitest.Start(b)
	seed(b, srv.DatabaseURL, 5_000, 20)
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
	for range 50 { // walk to page 51 (items 2,501–2,550)
		path := "/api/v1/reports?limit=50"
		if p.NextCursor != "" {
			path += "&cursor=" + p.NextCursor
		}
		if err := json.Unmarshal(get(path), &p); err != nil || p.Total != 5000 || len(p.Items) != 50 {
			b.Fatalf("list: total %d, %d items, err %v", p.Total, len(p.Items), err)
		}
	}
	cases := []struct{ name, path, mustContain string }{
		{"list-page50", "/api/v1/reports?limit=50", `"total":5000`},
		{"list-page50-deep-cursor", "/api/v1/reports?limit=50&cursor=" + p.NextCursor, `"total":5000`},
		{"list-sort-critical", "/api/v1/reports?limit=50&sort=-critical", `"total":5000`},
		{"minSeverity-critical", "/api/v1/reports?limit=50&minSeverity=critical", `"total":500`},
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
