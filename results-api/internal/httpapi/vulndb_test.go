package httpapi_test

import (
	"encoding/hex"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	cdx "github.com/CycloneDX/cyclonedx-go"

	"github.com/crowsnest-dev/crowsnest/api/finding"

	"github.com/crowsnest-dev/crowsnest/results-api/api"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/bomtest"
)

// TestPutVulnDBs records the DB of many reports at once: the same scopes
// and body rules as PUT …/{digest}/vulndb, a missing digest listed and not
// refused, and a refused request changes nothing.
func TestPutVulnDBs(t *testing.T) {
	c := newClient(t, withScopes())
	d1, d2, gone := bomtest.Digest(1), bomtest.Digest(2), bomtest.Digest(3)
	for _, d := range []string{d1, d2} {
		if code, b := c.putAs("upload", d, vulns("high:CVE-1")); code != 201 {
			t.Fatalf("put: %d %s", code, b)
		}
	}
	var before, before2 api.ReportDetail
	c.getJSON("/api/v1/reports/"+d1, &before)
	c.getJSON("/api/v1/reports/"+d2, &before2)
	put := func(token, body string) (int, []byte) {
		t.Helper()
		hdr := []string{"Content-Type", "application/json"}
		if token != "" {
			hdr = append(hdr, "Authorization", "Bearer "+token)
		}
		return c.do(http.MethodPut, "/api/v1/reports/vulndb", []byte(body), hdr...)
	}
	db := `"built":"2026-11-20T03:04:05Z","schema":"v6.1.2"`
	ok := `{` + db + `,"digests":["` + d1 + `","` + d2 + `","` + gone + `"]}`
	many := make([]string, 1001)
	for i := range many {
		many[i] = `"` + bomtest.Digest(i+10) + `"`
	}
	for _, tc := range []struct {
		name, token, body string
		code              int
		errCode           string
	}{
		{"no token", "", ok, 401, "unauthorized"},
		{"unknown token", "nobody", ok, 403, "forbidden"},
		{"upload scope", "upload", ok, 403, "forbidden"},
		{"no digests", "rematch", `{` + db + `,"digests":[]}`, 400, "invalid_vulndb"},
		{"digests missing", "rematch", `{` + db + `}`, 400, "invalid_vulndb"},
		{"1001 digests", "rematch", `{` + db + `,"digests":[` + strings.Join(many, ",") + `]}`, 400, "invalid_vulndb"},
		{"bad digest", "rematch", `{` + db + `,"digests":["` + d1 + `","sha256:x"]}`, 400, "invalid_digest"},
		{"array injection", "rematch", `{` + db + `,"digests":["` + d1 + `\",\"` + d2 + `"]}`, 400, "invalid_digest"},
		{"schema not a version", "rematch", `{"built":"2026-11-20T03:04:05Z","schema":"six","digests":["` + d1 + `"]}`, 400, "invalid_vulndb"},
		{"unknown field", "rematch", `{` + db + `,"digests":["` + d1 + `"],"findings":[]}`, 400, "invalid_vulndb"},
		{"too large", "rematch", `{` + db + `,"digests":["` + strings.Repeat("a", 100<<10) + `"]}`, 413, "too_large"},
	} {
		code, body := put(tc.token, tc.body)
		if code != tc.code || errorCode(t, body) != tc.errCode {
			t.Errorf("%s: %d %s, want %d %s", tc.name, code, body, tc.code, tc.errCode)
		}
	}
	var after api.ReportDetail
	c.getJSON("/api/v1/reports/"+d1, &after)
	if after.DbBuilt != before.DbBuilt || *after.MatchedAt != *before.MatchedAt {
		t.Fatalf("a refused PUT changed the report: %+v", after)
	}

	for _, token := range []string{"rematch", "admin"} {
		code, body := put(token, ok)
		var res api.VulnDBBatchResult
		if code != 200 || json.Unmarshal(body, &res) != nil || res.Recorded != 2 || !slices.Equal(res.Missing, []string{gone}) {
			t.Fatalf("%s: %d %s", token, code, body)
		}
	}
	for d, b := range map[string]api.ReportDetail{d1: before, d2: before2} {
		c.getJSON("/api/v1/reports/"+d, &after)
		if after.DbBuilt != "2026-11-20T03:04:05Z" || *after.DbSchema != "v6.1.2" || after.StoredAt != b.StoredAt ||
			after.FindingCount != 1 || after.Cause != api.Scan {
			t.Errorf("%s after the batch: %+v", d, after)
		}
	}
}

// TestListShowsFindingsFingerprint: the report list carries the stored
// findings' fingerprint (the contract's), which the matcher compares.
func TestListShowsFindingsFingerprint(t *testing.T) {
	c := newClient(t)
	d := bomtest.Digest(1)
	bom := vulns("high:CVE-1", "low:CVE-2")
	c.put(d, bom)
	var l api.ReportList
	c.getJSON("/api/v1/reports?sort=image", &l)
	fs := parseFindings(t, bom)
	if len(l.Items) != 1 || l.Items[0].FindingsSha256 == nil || *l.Items[0].FindingsSha256 != fs {
		t.Fatalf("list %+v, want findingsSha256 %s", l.Items, fs)
	}
}

func parseFindings(t *testing.T, bom []byte) string {
	t.Helper()
	var doc cdx.BOM
	if err := json.Unmarshal(bom, &doc); err != nil {
		t.Fatal(err)
	}
	fs, err := finding.Of(&doc, 0)
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(finding.Fingerprint(fs))
}
