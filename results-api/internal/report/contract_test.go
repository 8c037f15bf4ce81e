package report_test

import (
	"testing"

	"github.com/crowsnest-dev/crowsnest/api/finding"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
)

// TestSeveritiesMatchContract: the stored severity column and the
// fingerprint both use the numbers, so results-api's must be the
// contract's.
func TestSeveritiesMatchContract(t *testing.T) {
	for s := report.Unknown; s <= report.Critical; s++ {
		if c := finding.Severity(s); c.String() != s.String() {
			t.Errorf("severity %d: results-api %s, contract %s", s, s, c)
		}
	}
	score := 7.5
	f := report.Finding{ID: "CVE-1", Source: "nvd", Severity: report.High, CVSSScore: &score, CVSSVector: "v",
		Package: report.Package{Name: "n", Version: "1", Type: "apk", PURL: "pkg:apk/n@1"}, FixedIn: []string{"2"},
		Description: "d", URL: "u"}
	c := report.ToContract([]report.Finding{f})
	if back := report.FromContract(&c[0]); back.ID != f.ID || back.Severity != f.Severity || back.Package != f.Package ||
		back.CVSSScore != f.CVSSScore || back.FixedIn[0] != "2" || back.URL != "u" || back.Description != "d" || back.Source != "nvd" || back.CVSSVector != "v" {
		t.Errorf("round trip: %+v, want %+v", back, f)
	}
}
