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

func TestGzipRoundTrip(t *testing.T) {
	in := bytes.Repeat([]byte(`{"bomFormat":"CycloneDX"}`), 1000)
	z, err := gzipBytes(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(z) >= len(in) {
		t.Fatalf("gzip did not shrink %d bytes (got %d)", len(in), len(z))
	}
	zr, err := gzip.NewReader(bytes.NewReader(z))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil || !bytes.Equal(out, in) {
		t.Fatalf("round trip differs (err %v)", err)
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
