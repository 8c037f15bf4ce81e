package main

import (
	"github.com/crowsnest-dev/crowsnest/api/scan"
	"github.com/crowsnest-dev/crowsnest/test/support"

	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/test/support/resultsapitest"
)

// grypeJSONFixture is Grype's real JSON report of the clean fixture's scan
// (make fixtures), against the project's v6 DB built at the manifest's
// dbBuilt.
var grypeJSONFixture = filepath.Join(fixtureDir, "clean.grype.json")

// TestReadProvenanceFromRealGrypeJSON reads the DB from Grype's own report
// of a real scan: the build time the fixtures' DB was written with and a
// v6 schema.
func TestReadProvenanceFromRealGrypeJSON(t *testing.T) {
	p, err := readProvenance(grypeJSONFixture)
	if err != nil {
		t.Fatal(err)
	}
	want := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	if !p.Built.Equal(want) || !strings.HasPrefix(p.Schema, "v6.") || !dbSchemaPattern.MatchString(p.Schema) {
		t.Errorf("provenance %v %q, want %v and a v6 schema", p.Built, p.Schema, want)
	}
}

// TestReadProvenanceRefusesWhatIsNotADB: a report naming no DB, a bad
// build time or schema, or no JSON at all gives an error, never a DB.
func TestReadProvenanceRefusesWhatIsNotADB(t *testing.T) {
	for name, doc := range map[string]string{
		"no descriptor":  `{"matches":[{"x":[1,2,{"y":"}"}]}],"source":{}}`,
		"no db":          `{"matches":[],"descriptor":{"name":"grype","version":"0.121.2"}}`,
		"bad built":      `{"descriptor":{"db":{"status":{"schemaVersion":"v6.1.10","built":"yesterday"}}}}`,
		"bad schema":     `{"descriptor":{"db":{"status":{"schemaVersion":"v6; rm -rf","built":"2026-11-01T00:00:00Z"}}}}`,
		"not an object":  `[1,2,3]`,
		"truncated JSON": `{"matches":[{"vulnerability":`,
	} {
		path := filepath.Join(t.TempDir(), "grype.json")
		if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		if p, err := readProvenance(path); err == nil {
			t.Errorf("%s: read %+v, want an error", name, p)
		}
	}
	if _, err := readProvenance(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Error("a missing file: no error")
	}
}

// TestUploadSendsTheDBGrypeUsed runs the uploader as the scan Job does,
// with Grype's JSON report next to the BOM, against a real results-api:
// the stored report names the DB. Without a readable report the BOM is
// still stored, with an unknown DB, and the uploader says why.
func TestUploadSendsTheDBGrypeUsed(t *testing.T) {
	srv := resultsapitest.Start(t)
	tok := tokenFile(t, srv.Token)
	f := fixture(t, "clean")
	in := invocation{api: srv.URL, bom: filepath.Join(fixtureDir, f.File), digest: f.Digest, image: f.Image, tokenFile: tok,
		extra: []string{"--grype-json", grypeJSONFixture}}
	if code := runUploader(t, in, nil); code != scan.ExitOK {
		t.Fatalf("exit %d", code)
	}
	var got struct {
		DBBuilt  string `json:"dbBuilt"`
		DBSchema string `json:"dbSchema"`
	}
	if code := getJSON(t, srv, "/api/v1/reports/"+f.Digest, &got); code != 200 || got.DBBuilt != "2026-11-01T00:00:00Z" || !strings.HasPrefix(got.DBSchema, "v6.") {
		t.Fatalf("GET report: %d, DB %q %q; want 2026-11-01T00:00:00Z and a v6 schema", code, got.DBBuilt, got.DBSchema)
	}

	other := strings.Replace(f.Digest, "sha256:", "sha256:0", 1)[:len(f.Digest)]
	logs := &support.Buffer{}
	in.digest, in.image = other, ""
	in.extra = []string{"--grype-json", filepath.Join(t.TempDir(), "missing.json")}
	if code := runUploader(t, in, logs); code != scan.ExitOK {
		t.Fatalf("without Grype's JSON: exit %d", code)
	}
	if countMsg(t, logs, "DB provenance unreadable, uploading without it") != 1 {
		t.Error("no warning about the missing DB provenance")
	}
	if code := getJSON(t, srv, "/api/v1/reports/"+other, &got); code != 200 || got.DBBuilt != "" {
		t.Fatalf("GET report: %d, DB %q, want stored with an unknown DB", code, got.DBBuilt)
	}
}
