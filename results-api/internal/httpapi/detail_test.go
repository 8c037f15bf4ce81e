package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"testing"

	"github.com/crowsnest-dev/crowsnest/results-api/api"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/bomtest"
)

// detail GETs one page of a report's findings and decodes it strictly: a
// field the OpenAPI document (and so the generated type) lacks fails.
func (c *client) detail(digest, query string) api.ReportDetail {
	c.t.Helper()
	path := "/api/v1/reports/" + digest + "?" + query
	code, b := c.do(http.MethodGet, path, nil)
	if code != http.StatusOK {
		c.t.Fatalf("GET %s: %d %.300s", path, code, b)
	}
	var d api.ReportDetail
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		c.t.Fatalf("GET %s: %v", path, err)
	}
	return d
}

// allFindings follows findingsNextCursor to the last page and returns the
// first page's detail with every page's findings, and the page sizes.
func (c *client) allFindings(digest, sort string) (api.ReportDetail, []int) {
	c.t.Helper()
	q := url.Values{}
	if sort != "" {
		q.Set("sort", sort)
	}
	all := c.detail(digest, q.Encode())
	sizes := []int{len(all.Findings)}
	for next := all.FindingsNextCursor; next != nil; {
		if len(sizes) > 200 {
			c.t.Fatal("cursor walk did not end")
		}
		q.Set("findingsCursor", *next)
		page := c.detail(digest, q.Encode())
		all.Findings = append(all.Findings, page.Findings...)
		sizes = append(sizes, len(page.Findings))
		next = page.FindingsNextCursor
	}
	all.FindingsNextCursor = nil
	return all, sizes
}

var sevRank = map[api.Severity]int{api.SeverityCritical: 5, api.SeverityHigh: 4, api.SeverityMedium: 3,
	api.SeverityLow: 2, api.SeverityNegligible: 1, api.SeverityUnknown: 0}

// A report of 1,234 findings is served 500, 500 and 234 at a time by
// default, each finding once, in the sort's order; findingCount is the
// total on every page.
func TestReportFindingPages(t *testing.T) {
	c := newClient(t)
	d := bomtest.Digest(20)
	sevs := []string{"critical", "high", "medium", "low", "none", "unknown"}
	vulns := make([]bomtest.Vuln, 1234)
	for i := range vulns {
		// Scores repeat and every seventh is absent: ties the cursor must step over.
		vulns[i] = bomtest.Vuln{ID: fmt.Sprintf("CVE-2026-%05d", i), Severity: sevs[i%6], Package: fmt.Sprintf("pkg%02d", i%40),
			Version: "1.0", Score: float64(i%7) * 1.5}
	}
	if code, b := c.put(d, bomtest.BOM(vulns...)); code != http.StatusCreated {
		t.Fatalf("PUT: %d %s", code, b)
	}

	for _, sort := range []string{"", "id", "package"} {
		det, sizes := c.allFindings(d, sort)
		if !slices.Equal(sizes, []int{500, 500, 234}) || det.FindingCount != 1234 {
			t.Fatalf("sort %q: pages %v, findingCount %d; want 500/500/234 of 1234", sort, sizes, det.FindingCount)
		}
		seen := map[string]bool{}
		for i, f := range det.Findings {
			if seen[f.Id] {
				t.Fatalf("sort %q: %s twice", sort, f.Id)
			}
			seen[f.Id] = true
			if i == 0 {
				continue
			}
			prev := det.Findings[i-1]
			var inOrder bool
			switch sort {
			case "":
				inOrder = sevRank[prev.Severity] > sevRank[f.Severity] || sevRank[prev.Severity] == sevRank[f.Severity] &&
					(f.CvssScore == nil || prev.CvssScore != nil && *prev.CvssScore >= *f.CvssScore)
			case "id":
				inOrder = prev.Id < f.Id
			case "package":
				inOrder = prev.Package.Name <= f.Package.Name
			}
			if !inOrder {
				t.Fatalf("sort %q: finding %d (%s %s %v %s) after (%s %s %v %s)", sort, i, f.Id, f.Severity, f.CvssScore, f.Package.Name,
					prev.Id, prev.Severity, prev.CvssScore, prev.Package.Name)
			}
		}
		one := c.detail(d, url.Values{"sort": {sort}, "findingsLimit": {"5000"}}.Encode())
		if one.FindingsNextCursor != nil || !slices.EqualFunc(one.Findings, det.Findings, func(a, b api.Finding) bool { return a.Id == b.Id }) {
			t.Errorf("sort %q: one page of 5000 differs from the pages of 500", sort)
		}
	}
	if det := c.detail(d, "findingsLimit=1234"); len(det.Findings) != 1234 || det.FindingsNextCursor != nil {
		t.Errorf("findingsLimit=1234: %d findings, cursor %v", len(det.Findings), det.FindingsNextCursor)
	}
}

// Out-of-range limits and cursors that are not this endpoint's, for this
// sort, are 400 invalid_query, before any finding is read.
func TestReportFindingQueryRejected(t *testing.T) {
	c := newClient(t)
	d := bomtest.Digest(21)
	if code, b := c.put(d, constructed); code != http.StatusCreated {
		t.Fatalf("PUT: %d %s", code, b)
	}
	bySeverity := c.detail(d, "findingsLimit=1").FindingsNextCursor
	byID := c.detail(d, "sort=id&findingsLimit=1").FindingsNextCursor
	if bySeverity == nil || byID == nil {
		t.Fatal("a page of 1 of 3 findings has no next cursor")
	}
	list := c.detail(d, "")
	if len(list.Findings) != 3 || list.FindingsNextCursor != nil {
		t.Fatalf("default page: %d findings, cursor %v", len(list.Findings), list.FindingsNextCursor)
	}
	var reports api.ReportList
	c.put(bomtest.Digest(22), constructed)
	c.getJSON("/api/v1/reports?limit=1", &reports)
	for _, query := range []string{
		"findingsLimit=5001", "findingsLimit=0", "findingsLimit=-1", "findingsLimit=many",
		"findingsCursor=not-a-cursor", "findingsCursor=" + url.QueryEscape(*reports.NextCursor),
		"sort=id&findingsCursor=" + url.QueryEscape(*bySeverity), "findingsCursor=" + url.QueryEscape(*byID),
		"sort=cvss",
	} {
		if code, b := c.do(http.MethodGet, "/api/v1/reports/"+d+"?"+query, nil); code != http.StatusBadRequest || errorCode(t, b) != "invalid_query" {
			t.Errorf("%s: %d %s, want 400 invalid_query", query, code, b)
		}
	}
	if det := c.detail(d, "sort=id&findingsLimit=5000&findingsCursor="+url.QueryEscape(*byID)); len(det.Findings) != 2 {
		t.Errorf("after the first finding by id: %d findings, want 2", len(det.Findings))
	}
}
