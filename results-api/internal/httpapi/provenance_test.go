package httpapi_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/crowsnest-dev/crowsnest/api/scan"

	"github.com/crowsnest-dev/crowsnest/results-api/api"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/bomtest"
)

// TestUploadRecordsDBProvenance uploads reports as the scan Job's uploader
// does, with the DB Grype matched against in two headers: both are stored
// and shown; a report without them is stored with an unknown DB; a bad or
// half value is refused with 400 invalid_vulndb and stores nothing; the
// same BOM uploaded again with headers records the DB it names.
func TestUploadRecordsDBProvenance(t *testing.T) {
	c := newClient(t)
	const built, schema = "2026-11-01T00:00:00Z", "v6.1.10"
	withDB := []string{scan.HeaderDBBuilt, built, scan.HeaderDBSchema, schema}
	detail := func(digest string) api.ReportDetail {
		t.Helper()
		var d api.ReportDetail
		c.getJSON("/api/v1/reports/"+digest, &d)
		return d
	}
	schemaOf := func(d api.ReportDetail) string {
		if d.DbSchema == nil {
			return ""
		}
		return *d.DbSchema
	}

	scanned := bomtest.Digest(1)
	if code, b := c.put(scanned, vulns("high:CVE-1"), withDB...); code != http.StatusCreated {
		t.Fatalf("upload with the DB: %d %s", code, b)
	}
	if d := detail(scanned); d.DbBuilt != built || schemaOf(d) != schema {
		t.Errorf("stored DB %q %q, want %s %s", d.DbBuilt, schemaOf(d), built, schema)
	}

	unknown := bomtest.Digest(2)
	bom := vulns("medium:CVE-2")
	if code, b := c.put(unknown, bom); code != http.StatusCreated {
		t.Fatalf("upload without the DB: %d %s", code, b)
	}
	if d := detail(unknown); d.DbBuilt != "" || schemaOf(d) != "" {
		t.Errorf("a report without the headers records DB %q %q, want unknown", d.DbBuilt, schemaOf(d))
	}
	// The uploader retrying the same bytes, now with the DB: recorded.
	if code, b := c.put(unknown, bom, withDB...); code != http.StatusOK {
		t.Fatalf("same BOM with the DB: %d %s", code, b)
	}
	if d := detail(unknown); d.DbBuilt != built || schemaOf(d) != schema {
		t.Errorf("same BOM with the DB records %q %q", d.DbBuilt, schemaOf(d))
	}

	refused := bomtest.Digest(3)
	for _, tc := range []struct {
		name string
		hdr  []string
	}{
		{"built not a time", []string{scan.HeaderDBBuilt, "yesterday", scan.HeaderDBSchema, schema}},
		{"built without a zone", []string{scan.HeaderDBBuilt, "2026-11-01T00:00:00", scan.HeaderDBSchema, schema}},
		{"schema not a version", []string{scan.HeaderDBBuilt, built, scan.HeaderDBSchema, "six"}},
		{"schema with a payload", []string{scan.HeaderDBBuilt, built, scan.HeaderDBSchema, "v6.1.10<script>"}},
		{"built alone", []string{scan.HeaderDBBuilt, built}},
		{"schema alone", []string{scan.HeaderDBSchema, schema}},
	} {
		code, b := c.put(refused, vulns("low:CVE-3"), tc.hdr...)
		if code != http.StatusBadRequest || errorCode(t, b) != "invalid_vulndb" {
			t.Errorf("%s: %d %s, want 400 invalid_vulndb", tc.name, code, b)
		}
		// An existing report is not touched either.
		code, b = c.put(scanned, vulns("critical:CVE-9"), tc.hdr...)
		if code != http.StatusBadRequest {
			t.Errorf("%s over an existing report: %d %s", tc.name, code, b)
		}
	}
	if code, _ := c.do(http.MethodGet, "/api/v1/reports/"+refused, nil); code != http.StatusNotFound {
		t.Errorf("a refused upload was stored: GET %d", code)
	}
	if d := detail(scanned); d.DbBuilt != built || len(d.Findings) != 1 {
		t.Errorf("refused uploads changed the report: DB %q, %d findings", d.DbBuilt, len(d.Findings))
	}
}

// TestExportsCarryProvenance: the CSV exports (one report's and the
// fleet's) end every row with the Grype release and the DB build and
// schema; the SARIF driver names the release as its version and the DB in
// its properties.
func TestExportsCarryProvenance(t *testing.T) {
	c := newClient(t)
	d := bomtest.Digest(7)
	if code, b := c.put(d, vulns("high:CVE-7"), scan.HeaderDBBuilt, "2026-11-01T00:00:00Z", scan.HeaderDBSchema, "v6.1.10"); code != http.StatusCreated {
		t.Fatalf("upload: %d %s", code, b)
	}
	want := []string{"0.121.2", "2026-11-01T00:00:00Z", "v6.1.10"}
	for _, path := range []string{"/api/v1/reports/" + d + "/findings.csv", "/api/v1/findings.csv?running=all"} {
		code, _, b := c.get(path)
		if code != http.StatusOK {
			t.Fatalf("%s: %d %s", path, code, b)
		}
		rows := readCSV(t, b)
		if len(rows) != 1 || !slices.Equal(rows[0][14:17], want) {
			t.Errorf("%s: rows %q, want grype_version, db_built, db_schema %q", path, rows, want)
		}
	}
	code, _, b := c.get("/api/v1/reports/" + d + "/sarif")
	var log struct {
		Runs []struct {
			Tool struct {
				Driver struct {
					Version    string
					Properties map[string]string
				}
			}
		}
	}
	if code != http.StatusOK || json.Unmarshal(b, &log) != nil || len(log.Runs) != 1 {
		t.Fatalf("sarif: %d %s", code, b)
	}
	if dr := log.Runs[0].Tool.Driver; dr.Version != "0.121.2" || dr.Properties["grypeDbBuilt"] != want[1] || dr.Properties["grypeDbSchema"] != want[2] {
		t.Errorf("SARIF driver %+v", dr)
	}
}
