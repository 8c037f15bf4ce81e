package rematch

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/test/support/resultsapitest"
)

// countingTransport counts the requests a pass sends to results-api.
type countingTransport struct{ n atomic.Int64 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return http.DefaultTransport.RoundTrip(r)
}

// BenchmarkPass runs a whole re-match pass over b.N stored reports against
// a real results-api (Postgres) with a DB whose advisories equal those the
// reports were matched with (a new build: every report is matched again),
// so "unchanged" has no report whose findings change and "changed=10%"
// one in ten (stored without its findings). The DB is small (3,000 rows)
// and the SBOMs have 120 packages each, so that the pass's own cost per
// report — decoding, comparing, encoding, saving progress, requests — is
// not buried under Grype's. Counters first (noise-free: BOM parses, encodes,
// fsyncs and HTTP requests per report), then reports/s.
func BenchmarkPass(b *testing.B) {
	const rows, pkgs = 3_000, 120
	advs := benchAdvisories(rows)
	old := openDB(b, writeDB(b, advs, fixtureBuilt))
	dir := writeDB(b, advs, db2Built)
	for _, every := range []int{0, 10} {
		name := "unchanged"
		if every > 0 {
			name = fmt.Sprintf("changed=%d%%", 100/every)
		}
		b.Run(name, func(b *testing.B) { benchPass(b, old, dir, pkgs, every) })
	}
}

func benchPass(b *testing.B, old *Matcher, dir string, pkgs, changedEvery int) {
	srv := resultsapitest.Start(b)
	var bomBytes int64
	for i := range b.N {
		out, _, err := old.Match(context.Background(), fleetSBOM(b, i, pkgs, 0.8))
		if err != nil {
			b.Fatal(err)
		}
		if changedEvery > 0 && i%changedEvery == 0 {
			out = withoutFindings(b, out)
		}
		bomBytes += int64(len(out))
		srv.PutReport(b, fmt.Sprintf("sha256:%064x", i+1), out)
	}
	m, err := Open(dir, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	ct := &countingTransport{}
	c := httpClient(b, srv)
	c.HTTP = &http.Client{Transport: ct, Timeout: time.Minute}
	pass := &Pass{Client: c, Dir: b.TempDir()}
	parsed0, enc0, fsync0 := work.bomBytesParsed.Load(), work.encodes.Load(), work.fsyncs.Load()

	b.ResetTimer()
	t0 := time.Now()
	res, err := pass.Run(context.Background(), m)
	elapsed := time.Since(t0)
	b.StopTimer()
	if err != nil || !res.Finished || res.Total != b.N || res.Failed != 0 {
		b.Fatalf("pass: %+v, %v", res.Counts, err)
	}
	if changedEvery > 0 && res.Changed != (b.N+changedEvery-1)/changedEvery {
		b.Fatalf("pass: %+v, want %d changed", res.Counts, (b.N+changedEvery-1)/changedEvery)
	}
	n := float64(b.N)
	// Parses per report: BOM bytes parsed over the stored BOMs' bytes.
	b.ReportMetric(float64(work.bomBytesParsed.Load()-parsed0)/float64(bomBytes), "BOM-parses/report")
	b.ReportMetric(float64(work.encodes.Load()-enc0)/n, "encodes/report")
	b.ReportMetric(float64(work.fsyncs.Load()-fsync0)/n, "fsyncs/report")
	b.ReportMetric(float64(ct.n.Load())/n, "requests/report")
	b.ReportMetric(n/elapsed.Seconds(), "reports/s")
}

// withoutFindings is a report with its vulnerabilities removed: the same
// components, so a re-match may replace it, with other findings.
func withoutFindings(b *testing.B, bom []byte) []byte {
	var doc map[string]any
	if err := json.Unmarshal(bom, &doc); err != nil {
		b.Fatal(err)
	}
	delete(doc, "vulnerabilities")
	out, err := json.Marshal(doc)
	if err != nil {
		b.Fatal(err)
	}
	return out
}
