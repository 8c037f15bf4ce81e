package main

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReadReport(t *testing.T) {
	for name, tc := range map[string]struct {
		content string
		max     int64
		want    string // "" = valid
	}{
		"cyclonedx":           {`{"bomFormat":"CycloneDX","specVersion":"1.6","version":1}`, 1 << 20, ""},
		"empty":               {"", 1 << 20, "empty file"},
		"whitespace":          {" \n", 1 << 20, "empty file"},
		"not json":            {"<html>", 1 << 20, "not a JSON object"},
		"truncated":           {`{"bomFormat":"CycloneDX","specVersion":"1.6"`, 1 << 20, "not a JSON object"},
		"json array":          {`[1,2]`, 1 << 20, "not a JSON object"},
		"grype native json":   {`{"matches":[],"descriptor":{"name":"grype"}}`, 1 << 20, `no "bomFormat"`},
		"spdx":                {`{"spdxVersion":"SPDX-2.3"}`, 1 << 20, `no "bomFormat"`},
		"other format":        {`{"bomFormat":"SPDX","specVersion":"1"}`, 1 << 20, `bomFormat is "SPDX"`},
		"missing spec":        {`{"bomFormat":"CycloneDX"}`, 1 << 20, `no "specVersion"`},
		"blank spec":          {`{"bomFormat":"CycloneDX","specVersion":" "}`, 1 << 20, `no "specVersion"`},
		"over the size limit": {`{"bomFormat":"CycloneDX","specVersion":"1.6"}`, 10, "larger than 10 bytes"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := readReport(writeFile(t, tc.content), tc.max)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, errInvalidReport) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want errInvalidReport mentioning %q", err, tc.want)
			}
		})
	}
	if _, err := readReport(filepath.Join(t.TempDir(), "missing.json"), 100); !errors.Is(err, errInvalidReport) {
		t.Fatalf("missing file: %v", err)
	}
}

// Both bodies shrink the report and decode to it; the zstd body is one
// frame that declares the report's size, with a 1 MiB window: what
// results-api stores as it came (a larger window it compresses again).
func TestBodiesRoundTrip(t *testing.T) {
	in := bytes.Repeat([]byte(`{"bomFormat":"CycloneDX"}`), 100_000) // 2.5 MB
	gz, err := gzipBody(in)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz.data))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil || !bytes.Equal(out, in) || gz.encoding != "gzip" || len(gz.data) >= len(in) {
		t.Fatalf("gzip: %d of %d bytes, round trip equal %v (err %v), encoding %q", len(gz.data), len(in), bytes.Equal(out, in), err, gz.encoding)
	}

	zs, err := zstdBody(in)
	if err != nil {
		t.Fatal(err)
	}
	var h zstd.Header
	if err := h.Decode(zs.data); err != nil {
		t.Fatal(err)
	}
	if zs.encoding != "zstd" || !h.HasFCS || h.FrameContentSize != uint64(len(in)) || h.SingleSegment || h.WindowSize != 1<<20 {
		t.Errorf("zstd frame: encoding %q, header %+v; want the content size declared and a 1 MiB window", zs.encoding, h)
	}
	dec, _ := zstd.NewReader(nil)
	defer dec.Close()
	if out, err := dec.DecodeAll(zs.data, nil); err != nil || !bytes.Equal(out, in) || len(zs.data) >= len(gz.data) {
		t.Fatalf("zstd: %d bytes (gzip %d), round trip equal %v (err %v)", len(zs.data), len(gz.data), bytes.Equal(out, in), err)
	}
}

func TestReadToken(t *testing.T) {
	if tok, err := readToken(writeFile(t, "abc.def.ghi\n")); err != nil || tok != "abc.def.ghi" {
		t.Fatalf("token %q err %v", tok, err)
	}
	for name, content := range map[string]string{"empty": "", "blank": " \n ", "two lines": "a\nb", "huge": strings.Repeat("x", 64<<10+1)} {
		if _, err := readToken(writeFile(t, content)); !errors.Is(err, errTokenInvalid) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	if _, err := readToken(filepath.Join(t.TempDir(), "none")); !errors.Is(err, errTokenInvalid) {
		t.Errorf("missing: %v", err)
	}
}

// BenchmarkBodies compresses the large real Grype fixture (5.9 MB) both
// ways, as a scan Job's uploader does once per report: zstd (what it
// sends) and gzip (what it sent before, and sends to an older
// results-api). It reports the compressed size per report.
func BenchmarkBodies(b *testing.B) {
	raw, err := os.ReadFile(filepath.Join(fixtureDir, "large.cdx.json"))
	if err != nil {
		b.Fatalf("Grype fixtures: %v (regenerate with `make fixtures`)", err)
	}
	for _, enc := range []struct {
		name string
		f    func([]byte) (body, error)
	}{{"zstd", zstdBody}, {"gzip", gzipBody}} {
		b.Run(enc.name, func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			var out body
			for b.Loop() {
				if out, err = enc.f(raw); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(out.data)), "bytes/report")
		})
	}
}
