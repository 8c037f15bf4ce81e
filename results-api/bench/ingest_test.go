package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/apitest"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/bomtest"
)

// largeFixture is real Grype output written by `make fixtures`.
var largeFixture = filepath.Join("..", "testdata", "grype", "large.cdx.json")

// BenchmarkIngest PUTs distinct reports through the real HTTP handler into
// a real Postgres, zstd-compressed as the uploader sends them and
// gzip-compressed as uploaders before it did, with 1 and 4 concurrent
// writers. The 1 MB and 5 MB BOMs are CONSTRUCTED CycloneDX
// (bomtest.Sized, Grype-shaped, ~560 bytes per finding). When the Grype
// large fixture exists (Grype's own output format, ~1,850 bytes per
// finding) it runs too: whole (5.9 MB), cut to its first vulnerabilities
// so that it is about 1 MB or 0.5 MB, and grown to the 8.75 MB of the
// largest report issue 30 measured (more advisories on the same packages).
func BenchmarkIngest(b *testing.B) {
	type bom struct {
		name string
		raw  []byte
	}
	boms := []bom{
		{"constructed-1MB", bomtest.Sized(1, 1<<20)},
		{"constructed-5MB", bomtest.Sized(5, 5<<20)},
	}
	if raw, err := os.ReadFile(largeFixture); err == nil {
		boms = append(boms, bom{"grype-large", raw}, bom{"grype-large-cut-1MB", cutBOM(b, raw, 1<<20)},
			bom{"grype-large-cut-512KB", cutBOM(b, raw, 512<<10)},
			bom{"grype-large-grown-8.75MB", growBOM(b, raw, 8960<<10)})
	}
	srv := apitest.Start(b)
	var seq atomic.Int64
	for _, bm := range boms {
		for _, enc := range []struct {
			name string
			body []byte
		}{
			{"zstd", zstdFrame(bm.raw)}, // as the uploader sends it
			{"gzip", gzipped(bm.raw)},   // as uploaders before it did
		} {
			for _, writers := range []int{1, 4} {
				b.Run(fmt.Sprintf("%s/enc=%s/writers=%d", bm.name, enc.name, writers), func(b *testing.B) {
					b.SetBytes(int64(len(bm.raw)))
					ingest(b, srv, enc.name, enc.body, writers, &seq)
					b.ReportMetric(float64(countVulns(b, bm.raw)), "findings/report")
				})
			}
		}
	}
}

func ingest(b *testing.B, srv *apitest.Server, encoding string, body []byte, writers int, seq *atomic.Int64) {
	c := httpClient(writers)
	lat := make([]time.Duration, b.N)
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for range writers {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				d := bomtest.Digest(1_000_000 + int(seq.Add(1)))
				req, _ := http.NewRequest(http.MethodPut,
					srv.URL+"/api/v1/reports/"+d+"?image=registry.example/bench@"+d, bytes.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+srv.Token)
				req.Header.Set("Content-Type", "application/vnd.cyclonedx+json")
				req.Header.Set("Content-Encoding", encoding)
				t0 := time.Now()
				if _, err := do(c, req, http.StatusCreated); err != nil {
					b.Error(err)
					return
				}
				lat[i] = time.Since(t0)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "reports/s")
	b.ReportMetric(ms(p99(lat)), "p99-ms")
}

// cutBOM keeps the first vulnerabilities of a CycloneDX document, and only
// the components they affect, so that it re-encodes (indented, as Grype
// writes) to about size bytes.
func cutBOM(b *testing.B, raw []byte, size int) []byte {
	var doc map[string]json.RawMessage
	var vulns, comps []json.RawMessage
	if err := json.Unmarshal(raw, &doc); err != nil {
		b.Fatal(err)
	}
	if json.Unmarshal(doc["vulnerabilities"], &vulns) != nil || json.Unmarshal(doc["components"], &comps) != nil {
		b.Fatal("large fixture: no vulnerabilities or components")
	}
	refOf := func(c json.RawMessage) string {
		var v struct {
			Ref string `json:"bom-ref"`
		}
		_ = json.Unmarshal(c, &v)
		return v.Ref
	}
	affects := func(v json.RawMessage) []string {
		var x struct{ Affects []struct{ Ref string } }
		_ = json.Unmarshal(v, &x)
		var out []string
		for _, a := range x.Affects {
			out = append(out, a.Ref)
		}
		return out
	}
	n := 1
	for {
		keep := map[string]bool{}
		for _, v := range vulns[:n] {
			for _, r := range affects(v) {
				keep[r] = true
			}
		}
		var cs []json.RawMessage
		for _, c := range comps {
			if keep[refOf(c)] {
				cs = append(cs, c)
			}
		}
		doc["vulnerabilities"], _ = json.Marshal(vulns[:n])
		doc["components"], _ = json.Marshal(cs)
		out, err := json.MarshalIndent(doc, "", " ")
		if err != nil {
			b.Fatal(err)
		}
		if len(out) >= size || n == len(vulns) {
			return out
		}
		n = min(n+n/16+1, len(vulns))
	}
}

// growBOM appends copies of a CycloneDX document's vulnerabilities, each
// under a new id (CVE-YYYY-N becomes CVE-YYYY-N+100000·k, in its text too)
// and a new bom-ref, affecting the same components, until the document
// re-encodes (two-space indent and <, > and & as they are, as Grype
// writes the fixture) to at least size bytes.
func growBOM(b *testing.B, raw []byte, size int) []byte {
	var doc map[string]json.RawMessage
	var vulns []json.RawMessage
	if err := json.Unmarshal(raw, &doc); err != nil {
		b.Fatal(err)
	}
	if err := json.Unmarshal(doc["vulnerabilities"], &vulns); err != nil || len(vulns) == 0 {
		b.Fatal("large fixture: no vulnerabilities")
	}
	grown := append([]json.RawMessage(nil), vulns...)
	for i := 0; ; i++ {
		if i%64 == 0 {
			doc["vulnerabilities"] = asGrype(b, grown, "")
			if out := asGrype(b, doc, "  "); len(out) >= size {
				return out
			}
		}
		v := vulns[i%len(vulns)]
		var head struct {
			Ref string `json:"bom-ref"`
			ID  string `json:"id"`
		}
		var year, num int
		if json.Unmarshal(v, &head) != nil || head.Ref == "" {
			b.Fatalf("large fixture: vulnerability %d has no bom-ref", i)
		}
		if _, err := fmt.Sscanf(head.ID, "CVE-%d-%d", &year, &num); err != nil {
			b.Fatalf("large fixture: vulnerability id %q: %v", head.ID, err)
		}
		k := i/len(vulns) + 1
		c := bytes.ReplaceAll(v, []byte(strconv.Quote(head.ID)), []byte(strconv.Quote(fmt.Sprintf("CVE-%d-%d", year, num+100000*k))))
		c = bytes.ReplaceAll(c, []byte("/"+head.ID), []byte(fmt.Sprintf("/CVE-%d-%d", year, num+100000*k)))
		c = bytes.Replace(c, []byte(strconv.Quote(head.Ref)), []byte(strconv.Quote(fmt.Sprintf("urn:uuid:00000000-0000-5000-8000-%012d", i))), 1)
		grown = append(grown, c)
	}
}

// countVulns counts vulnerabilities[] entries: Grype writes one per
// finding (id × affected component).
func countVulns(b *testing.B, raw []byte) int {
	var doc struct{ Vulnerabilities []json.RawMessage }
	if err := json.Unmarshal(raw, &doc); err != nil {
		b.Fatal(err)
	}
	return len(doc.Vulnerabilities)
}

// asGrype encodes v as Grype writes JSON: <, > and & as they are
// (json.Marshal's \u003c escapes would be ~15,000 escaped strings in the
// grown report that no Grype report has), indented by indent.
func asGrype(b *testing.B, v any, indent string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", indent)
	if err := enc.Encode(v); err != nil {
		b.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}
