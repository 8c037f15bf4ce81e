package bench

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/apitest"
)

// BenchmarkExport downloads the SARIF log and the CSV of the largest real
// Grype fixture (large.cdx.json, 3,000 findings) through the real HTTP
// handler from a real Postgres, reading each response to the end. The
// server runs in this process, so the allocations counted are the
// server's (store pages, encoding) and the client's reading together;
// B/finding and bytes/finding divide them by the report's findings.
func BenchmarkExport(b *testing.B) {
	raw, err := os.ReadFile(largeFixture)
	if err != nil {
		b.Fatalf("Grype large fixture: %v", err)
	}
	var mf struct {
		Fixtures []struct {
			Name, Digest string
			Findings     int
		}
	}
	mb, err := os.ReadFile(filepath.Join(filepath.Dir(largeFixture), "manifest.json"))
	if err == nil {
		err = json.Unmarshal(mb, &mf)
	}
	if err != nil {
		b.Fatal(err)
	}
	var digest string
	var findings int
	for _, f := range mf.Fixtures {
		if f.Name == "large" {
			digest, findings = f.Digest, f.Findings
		}
	}
	srv := apitest.Start(b)
	srv.PutReport(b, digest, raw)
	client := srv.Client()
	for _, route := range []string{"sarif", "findings.csv"} {
		b.Run(route, func(b *testing.B) {
			url := srv.URL + "/api/v1/reports/" + digest + "/" + route
			var sent int64
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				resp, err := client.Get(url)
				if err != nil {
					b.Fatal(err)
				}
				n, err := io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK {
					b.Fatalf("GET %s: %d %v", route, resp.StatusCode, err)
				}
				sent = n
			}
			b.StopTimer()
			runtime.ReadMemStats(&after)
			per := float64(b.N) * float64(findings)
			b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/per, "B/finding")
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/per, "allocs/finding")
			b.ReportMetric(float64(sent)/float64(findings), "bytes-out/finding")
		})
	}
}
