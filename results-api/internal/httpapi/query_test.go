package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/crowsnest-dev/crowsnest/results-api/api"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/bomtest"
)

func TestQueries(t *testing.T) {
	c := newClient(t)
	// Constructed reports: image i has i critical findings (i = 0..5) and
	// a fix only on odd i; image 3 also carries CVE-2026-7777.
	for i := range 6 {
		var vs []bomtest.Vuln
		for j := range i {
			v := bomtest.Vuln{ID: fmt.Sprintf("CVE-2026-1%03d", j), Severity: "critical", Package: "p", Version: "1"}
			if i%2 == 1 {
				v.Fix = "2"
			}
			vs = append(vs, v)
		}
		vs = append(vs, bomtest.Vuln{ID: "CVE-2026-0100", Severity: "low", Package: "q", Version: "1"})
		if i == 3 {
			vs = append(vs, bomtest.Vuln{ID: "CVE-2026-7777", Severity: "high", Package: "r", Version: "1"})
		}
		if code, b := c.put(bomtest.Digest(100+i), bomtest.BOM(vs...)); code != 201 {
			t.Fatalf("put %d: %d %s", i, code, b)
		}
	}
	var l api.ReportList
	c.getJSON("/api/v1/reports?minSeverity=critical", &l)
	if l.Total != 5 {
		t.Errorf("minSeverity=critical total %d, want 5", l.Total)
	}
	c.getJSON("/api/v1/reports?fixable=true", &l)
	if l.Total != 3 {
		t.Errorf("fixable total %d, want 3", l.Total)
	}
	c.getJSON("/api/v1/reports?q=cve-2026-7777", &l)
	if l.Total != 1 || l.Items[0].Digest != bomtest.Digest(103) {
		t.Errorf("q=CVE: %+v", l)
	}
	c.getJSON("/api/v1/reports?q=registry.example/app@"+bomtest.Digest(104)[:20], &l)
	if l.Total != 6 {
		t.Errorf("q=image prefix: total %d", l.Total)
	}

	// Cursor pagination over -critical visits every report once, in order.
	var seen []int
	cursor := ""
	for page := 0; page < 10; page++ {
		path := "/api/v1/reports?sort=-critical&limit=4"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		l = api.ReportList{}
		c.getJSON(path, &l)
		for _, it := range l.Items {
			seen = append(seen, it.Counts.Critical)
		}
		if l.NextCursor == nil {
			break
		}
		cursor = *l.NextCursor
	}
	if fmt.Sprint(seen) != "[5 4 3 2 1 0]" {
		t.Errorf("paged -critical = %v", seen)
	}
	if code, b := c.do(http.MethodGet, "/api/v1/reports?sort=image&cursor="+cursor, nil); code != 400 {
		t.Errorf("cursor for another sort: %d %s", code, b)
	}
	if code, _ := c.do(http.MethodGet, "/api/v1/reports?sort=bogus", nil); code != 400 {
		t.Errorf("bad sort: %d", code)
	}

	var v api.Vulnerability
	c.getJSON("/api/v1/vulnerabilities/CVE-2026-0100", &v)
	if len(v.Images) != 6 || v.Severity != api.SeverityLow {
		t.Errorf("vulnerability: %+v", v)
	}

	var st api.Stats
	c.getJSON("/api/v1/stats", &st)
	if st.Images != 6 || st.Counts.Critical != 15 || st.Counts.High != 1 || len(st.TopImages) != 6 || st.TopImages[0].Counts.Critical != 5 {
		t.Errorf("stats: %+v", st)
	}
}

func TestLookup10000(t *testing.T) {
	c := newClient(t)
	for i := range 3 {
		if code, _ := c.put(bomtest.Digest(i*1000), bomtest.BOM()); code != 201 {
			t.Fatal(code)
		}
	}
	req := api.LookupRequest{}
	for i := range 10000 {
		req.Digests = append(req.Digests, bomtest.Digest(i))
	}
	body, _ := json.Marshal(req)
	code, b := c.do(http.MethodPost, "/api/v1/reports/lookup", body, "Content-Type", "application/json")
	var resp api.LookupResponse
	if code != 200 || json.Unmarshal(b, &resp) != nil || len(resp.Reports) != 3 {
		t.Fatalf("lookup: %d %.200s", code, b)
	}
	req.Digests = append(req.Digests, bomtest.Digest(10001))
	body, _ = json.Marshal(req)
	if code, b := c.do(http.MethodPost, "/api/v1/reports/lookup", body); code != 413 || errorCode(t, b) != "too_many_digests" {
		t.Errorf("10,001 digests: %d %s", code, b)
	}
	if code, b := c.do(http.MethodPost, "/api/v1/reports/lookup", []byte(`{"digests":["sha256:nope"]}`)); code != 400 || errorCode(t, b) != "invalid_digest" {
		t.Errorf("bad digest: %d %s", code, b)
	}
}
