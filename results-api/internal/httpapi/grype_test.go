package httpapi_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/crowsnest-dev/crowsnest/results-api/api"
)

// grypeDir holds real Grype output written by `make fixtures`.
var grypeDir = filepath.Join("..", "..", "testdata", "grype")

type fixture struct {
	Name, File, Image, Digest string
	Synthetic                 bool
	Findings, Fixable         int
	DistinctIDs               int `json:"distinctIds"`
	Counts                    map[string]int
	VulnerabilityIDs          []string `json:"vulnerabilityIds"`
}

type manifest struct {
	GrypeVersion, DBBuilt string
	Fixtures              []fixture
}

func loadManifest(t *testing.T) manifest {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(grypeDir, "manifest.json"))
	if err != nil {
		// The fixtures are committed; a missing manifest is a broken
		// checkout, not a reason to test less.
		t.Fatalf("Grype fixtures: %v (regenerate with `make fixtures`)", err)
	}
	var m manifest
	if err := json.Unmarshal(b, &m); err != nil || len(m.Fixtures) == 0 {
		t.Fatalf("manifest.json: %v (%d fixtures)", err, len(m.Fixtures))
	}
	return m
}

// Every real Grype fixture goes in through the API (plain, gzip or zstd) and
// comes back with the manifest's numbers and its original bytes.
func TestGrypeFixturesRoundTrip(t *testing.T) {
	m := loadManifest(t)
	c := newClient(t)
	for i, fx := range m.Fixtures {
		t.Run(fx.Name, func(t *testing.T) {
			c := &client{t: t, srv: c.srv}
			raw, err := os.ReadFile(filepath.Join(grypeDir, fx.File))
			if err != nil {
				t.Fatalf("manifest lists %s: %v", fx.File, err)
			}
			body, hdr := raw, []string(nil)
			switch i % 3 { // a third each plain, gzip (older uploaders) and zstd (as the uploader sends them)
			case 1:
				var buf bytes.Buffer
				zw := gzip.NewWriter(&buf)
				_, _ = zw.Write(raw)
				_ = zw.Close()
				body, hdr = buf.Bytes(), []string{"Content-Encoding", "gzip"}
			case 2:
				enc, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithWindowSize(1<<20))
				body, hdr = enc.EncodeAll(raw, nil), []string{"Content-Encoding", "zstd"}
				_ = enc.Close()
			}
			code, out := c.put(fx.Digest, body, hdr...)
			if code != http.StatusCreated {
				t.Fatalf("PUT: %d %s", code, out)
			}
			var put api.ReportSummary
			if err := json.Unmarshal(out, &put); err != nil {
				t.Fatal(err)
			}
			got, _ := c.allFindings(fx.Digest, "")
			want := api.SeverityCounts{Critical: fx.Counts["critical"], High: fx.Counts["high"], Medium: fx.Counts["medium"],
				Low: fx.Counts["low"], Negligible: fx.Counts["negligible"], Unknown: fx.Counts["unknown"]}
			for name, s := range map[string]struct {
				counts            api.SeverityCounts
				fixable, findings int
				grype, digest     string
				scannedAt         time.Time
			}{
				"PUT": {put.Counts, put.Fixable, put.Findings, put.GrypeVersion, put.Digest, put.ScannedAt},
				"GET": {got.Counts, got.Fixable, got.FindingCount, got.GrypeVersion, got.Digest, got.ScannedAt},
			} {
				if s.counts != want || s.fixable != fx.Fixable || s.findings != fx.Findings {
					t.Errorf("%s: counts %+v fixable %d findings %d; manifest: %+v, %d, %d",
						name, s.counts, s.fixable, s.findings, want, fx.Fixable, fx.Findings)
				}
				// Grype's CycloneDX carries no DB build time; the fixtures'
				// metadata.timestamp is set to it, and scannedAt comes from there.
				if s.grype != m.GrypeVersion || s.digest != fx.Digest || s.scannedAt.Format(time.RFC3339) != m.DBBuilt {
					t.Errorf("%s metadata: grype %q digest %s scannedAt %v", name, s.grype, s.digest, s.scannedAt)
				}
			}
			if len(got.Findings) != fx.Findings {
				t.Errorf("%d findings listed, manifest says %d", len(got.Findings), fx.Findings)
			}
			ids := map[string]bool{}
			fixable := 0
			for _, f := range got.Findings {
				ids[f.Id] = true
				if f.Fixable {
					fixable++
				}
				if f.Package.Name == "" || f.Package.Version == "" || f.Severity == "" {
					t.Errorf("finding %s lacks package or severity: %+v", f.Id, f)
				}
			}
			if fixable != fx.Fixable {
				t.Errorf("%d findings fixable, manifest says %d", fixable, fx.Fixable)
			}
			for _, id := range fx.VulnerabilityIDs {
				if !ids[id] {
					t.Errorf("vulnerability %s missing", id)
				}
			}
			if len(ids) != fx.DistinctIDs {
				t.Errorf("%d distinct ids, manifest says %d", len(ids), fx.DistinctIDs)
			}
			code, bom := c.do(http.MethodGet, "/api/v1/reports/"+fx.Digest+"/bom", nil)
			if code != http.StatusOK || !bytes.Equal(bom, raw) {
				t.Fatalf("BOM: %d, %d bytes back of %d, identical %v", code, len(bom), len(raw), bytes.Equal(bom, raw))
			}
			// Re-uploading the same report is a no-op: 200 and the same summary.
			if code, _ := c.put(fx.Digest, raw); code != http.StatusOK {
				t.Errorf("re-upload: %d", code)
			}
		})
	}
	// The "images with a critical CVE" view over the real fixtures.
	var list api.ReportList
	c.getJSON("/api/v1/reports?minSeverity=critical&limit=100", &list)
	var want, got []string
	for _, fx := range m.Fixtures {
		if fx.Counts["critical"] > 0 {
			want = append(want, fx.Digest)
		}
	}
	for _, s := range list.Items {
		got = append(got, s.Digest)
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("minSeverity=critical: %s, want %s", strings.Join(got, " "), strings.Join(want, " "))
	}
}
