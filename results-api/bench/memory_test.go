package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/crowsnest-dev/crowsnest/test/support/pgtest"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/bomtest"
)

// Sizes of BenchmarkMemoryUnderLoad.
const (
	chartMemoryLimit = 512 << 20 // the chart's resultsApi.resources.limits.memory
	chartMaxBOMBytes = 64 << 20  // the chart's resultsApi.maxBomBytes
)

// BenchmarkMemoryUnderLoad runs the results-api binary as a child process,
// configured as the chart runs it (--max-bom-bytes=64 MiB, every other
// limit at its default, no GOMEMLIMIT), and reads its resident memory from
// /proc/PID/status while 8 clients upload 32 MiB BOMs at once and 200
// clients download BOMs of the same size over and over.
//
// The uploads are Grype's large fixture grown to 32 MiB (30,000 findings),
// gzip-compressed as the uploader sends them, and retried after
// Retry-After on 503 as the uploader retries 5xx. The downloaders retry at
// once: they play a client that does not back off. Reported: the peak RSS
// (the kernel's VmHWM or the highest VmRSS sampled every 10 ms) against
// the chart's 512 MiB limit; uploads stored and refused; downloads
// completed, refused and cut short; and reports half-stored, counted in
// Postgres (a report whose findings rows or BOM row are missing), which
// must be 0. Smoke mode: 2 MiB BOMs, 2 uploaders, 20 downloaders.
// CROWSNEST_BENCH_RESULTS_API=/path/to/results-api measures another build
// (an older one, say) under the same load.
func BenchmarkMemoryUnderLoad(b *testing.B) {
	size, uploaders, downloaders := 32<<20, 8, 200
	if smoke {
		size, uploaders, downloaders = 2<<20, 2, 20
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	dsn, drop, err := pgtest.CreateDatabase(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = drop() }()
	bom := grownBOM(b, size)
	body := gzipped(bom)
	findings := countVulns(b, bom)
	api := startAPI(b, dsn, nil, "--max-bom-bytes="+strconv.Itoa(chartMaxBOMBytes))
	idle, err := api.status("VmRSS")
	if err != nil {
		b.Fatal(err)
	}

	// Two reports to download, stored before the load begins.
	c := httpClient(downloaders + uploaders)
	for i := range 2 {
		if code, err := putBOM(c, api, bomtest.Digest(2_000_000+i), body); err != nil || code != http.StatusCreated {
			b.Fatalf("seed report %d: %d %v", i, code, err)
		}
	}
	b.ResetTimer()
	start := time.Now()
	var stored, refusedUp, refusedDown, downloads, cut atomic.Int64
	var uploads, readers sync.WaitGroup
	done := make(chan struct{})
	for i := range downloaders {
		readers.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-done:
					if n > 0 {
						return
					}
				default:
				}
				switch code, complete := getBOM(c, api, bomtest.Digest(2_000_000+i%2)); {
				case code == http.StatusOK && complete:
					downloads.Add(1)
				case code == http.StatusOK:
					cut.Add(1)
				case code == http.StatusServiceUnavailable || code == http.StatusTooManyRequests:
					refusedDown.Add(1)
				default:
					b.Errorf("download: HTTP %d", code)
					return
				}
			}
		})
	}
	for i := range uploaders {
		uploads.Go(func() {
			for attempt := 1; attempt <= 100; attempt++ {
				code, err := putBOM(c, api, bomtest.Digest(3_000_000+i), body)
				switch {
				case err == nil && code == http.StatusCreated:
					stored.Add(1)
					return
				case err == nil && (code == http.StatusServiceUnavailable || code == http.StatusTooManyRequests):
					refusedUp.Add(1)
					time.Sleep(time.Second) // the uploader's backoff starts near 1 s
				default:
					b.Errorf("upload %d, attempt %d: %d %v", i, attempt, code, err)
					return
				}
			}
			b.Errorf("upload %d: not stored after 100 attempts", i)
		})
	}
	uploads.Wait()
	close(done)
	readers.Wait()
	elapsed := time.Since(start)
	b.StopTimer()

	hwm, sampled, err := api.Peak()
	if err != nil {
		b.Fatal(err)
	}
	// VmHWM is updated lazily by the kernel; a sample can be a little above.
	hwm = max(hwm, sampled)
	half := halfStored(b, dsn, findings)
	b.ReportMetric(float64(hwm)/(1<<20), "peak-rss-MiB")
	b.ReportMetric(float64(idle)/(1<<20), "idle-rss-MiB")
	b.ReportMetric(float64(hwm)/chartMemoryLimit, "peak/limit")
	b.ReportMetric(float64(stored.Load()), "stored")
	b.ReportMetric(float64(refusedUp.Load()), "upload-refusals")
	b.ReportMetric(float64(downloads.Load()), "downloads")
	b.ReportMetric(float64(refusedDown.Load()), "download-refusals")
	b.ReportMetric(float64(cut.Load()), "downloads-cut")
	b.ReportMetric(float64(half), "half-stored")
	b.ReportMetric(elapsed.Seconds(), "load-s")
	b.Logf("BOM %.1f MiB (%d findings, %.1f MiB gzip); RSS %.0f MiB idle, peak %.0f MiB (VmHWM, or the highest sample %.0f MiB) of %d MiB; "+
		"uploads %d stored, %d refused; downloads %d complete, %d refused, %d cut; half-stored %d; %v",
		float64(len(bom))/(1<<20), findings, float64(len(body))/(1<<20), float64(idle)/(1<<20), float64(hwm)/(1<<20), float64(sampled)/(1<<20),
		chartMemoryLimit>>20, stored.Load(), refusedUp.Load(), downloads.Load(), refusedDown.Load(), cut.Load(), half,
		elapsed.Round(time.Second))
	if stored.Load() != int64(uploaders) || half != 0 || cut.Load() != 0 {
		b.Errorf("stored %d of %d, half-stored %d, downloads cut %d", stored.Load(), uploaders, half, cut.Load())
	}
	if hwm > chartMemoryLimit {
		b.Errorf("peak RSS %d MiB exceeds the chart's %d MiB limit", hwm>>20, chartMemoryLimit>>20)
	}
}

func putBOM(c *http.Client, api *apiProcess, digest string, body []byte) (int, error) {
	req, err := http.NewRequest(http.MethodPut, api.URL+"/api/v1/reports/"+digest, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+api.Token)
	req.Header.Set("Content-Type", "application/vnd.cyclonedx+json")
	req.Header.Set("Content-Encoding", "gzip")
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// getBOM downloads a BOM to nowhere; complete is false when fewer bytes
// than Content-Length arrived.
func getBOM(c *http.Client, api *apiProcess, digest string) (code int, complete bool) {
	resp, err := c.Get(api.URL + "/api/v1/reports/" + digest + "/bom")
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, err == nil && n == resp.ContentLength
}

// halfStored counts reports in Postgres whose findings rows do not match
// their summary (or the BOM's vulnerabilities) or whose BOM row is missing.
func halfStored(b *testing.B, dsn string, findings int) int {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	err = conn.QueryRow(ctx, `SELECT count(*) FROM reports r
		WHERE r.findings <> $1
		   OR r.findings <> (SELECT count(*) FROM findings f WHERE f.digest = r.digest)
		   OR NOT EXISTS (SELECT 1 FROM report_boms m WHERE m.digest = r.digest)`, findings).Scan(&n)
	if err != nil {
		b.Fatal(err)
	}
	var orphans int
	if err := conn.QueryRow(ctx, `SELECT (SELECT count(DISTINCT digest) FROM findings WHERE digest NOT IN (SELECT digest FROM reports))
		+ (SELECT count(*) FROM report_boms WHERE digest NOT IN (SELECT digest FROM reports))`).Scan(&orphans); err != nil {
		b.Fatal(err)
	}
	return n + orphans
}

// grownBOM is Grype's large fixture (real output) with its vulnerabilities
// repeated under suffixed ids (or cut) until the document has about size
// bytes. Without the fixture it is a constructed BOM of that size.
func grownBOM(b *testing.B, size int) []byte {
	raw, err := os.ReadFile(largeFixture)
	if err != nil {
		return bomtest.Sized(7, size)
	}
	if size <= len(raw) {
		return cutBOM(b, raw, size)
	}
	var doc map[string]json.RawMessage
	var vulns []map[string]json.RawMessage
	if json.Unmarshal(raw, &doc) != nil || json.Unmarshal(doc["vulnerabilities"], &vulns) != nil {
		b.Fatal("large fixture: no vulnerabilities")
	}
	var all []map[string]json.RawMessage
	for k := 0; ; k++ {
		for _, v := range vulns {
			var id string
			_ = json.Unmarshal(v["id"], &id)
			c := make(map[string]json.RawMessage, len(v))
			for key, val := range v {
				c[key] = val
			}
			c["id"], _ = json.Marshal(fmt.Sprintf("%s-%d", id, k))
			all = append(all, c)
		}
		doc["vulnerabilities"], _ = json.Marshal(all)
		out, err := json.MarshalIndent(doc, "", " ")
		if err != nil {
			b.Fatal(err)
		}
		if len(out) >= size {
			return out
		}
	}
}
