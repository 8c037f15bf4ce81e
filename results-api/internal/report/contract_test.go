package report_test

import (
	"testing"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
)

// TestContractRoundTrip: a finding converted to the contract's (for the
// fingerprint) and back loses nothing. (report.Severity is the contract's
// finding.Severity itself, so the stored numbers cannot drift.)
func TestContractRoundTrip(t *testing.T) {
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
