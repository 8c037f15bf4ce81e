package dbwrite

import (
	"testing"
	"time"

	v6 "github.com/anchore/grype/grype/db/v6"

	"github.com/crowsnest-dev/crowsnest/matcher/dbwrite/advisory"
)

// TestWriteDecorations reads the KEV and EPSS rows back with Grype's own v6
// reader: the GHSA of CVE-2023-48795 gets its alias's score, a listed CVE its
// catalog dates, and an excluded advisory takes its rows with it.
func TestWriteDecorations(t *testing.T) {
	dir := t.TempDir()
	var advs []advisory.Advisory
	for _, a := range advisory.All(120) {
		if a.ID != "CVE-2024-5535" {
			advs = append(advs, a)
		}
	}
	if _, err := Write(dir, advs, time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	r, err := v6.NewReader(v6.Config{DBDirPath: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()

	kevs, err := r.GetKnownExploitedVulnerabilities("CVE-2023-4911")
	if err != nil || len(kevs) != 1 {
		t.Fatalf("KEV CVE-2023-4911: %d rows, err %v", len(kevs), err)
	}
	b := kevs[0].BlobValue
	if b == nil || b.DateAdded.Format(time.DateOnly) != "2023-11-21" || b.DueDate.Format(time.DateOnly) != "2023-12-12" || b.KnownRansomwareCampaignUse != "Unknown" {
		t.Fatalf("KEV CVE-2023-4911 blob %+v", b)
	}
	if kevs, _ := r.GetKnownExploitedVulnerabilities("CVE-2023-5363"); len(kevs) != 0 {
		t.Fatalf("CVE-2023-5363 is not in the catalog, got %+v", kevs)
	}
	if kevs, _ := r.GetKnownExploitedVulnerabilities("CVE-2099-00120"); len(kevs) != 1 || kevs[0].BlobValue.KnownRansomwareCampaignUse != "Known" {
		t.Fatalf("synthetic CVE-2099-00120: %+v, want a KEV row with known ransomware use", kevs)
	}

	scores, err := r.GetEpss("CVE-2023-48795")
	if err != nil || len(scores) != 1 || scores[0].Epss != 0.61 || scores[0].Percentile != 0.98 || scores[0].Date.Format(time.DateOnly) != advisory.EPSSDate {
		t.Fatalf("EPSS CVE-2023-48795 (alias of GHSA-45x7-px36-x8w8): %+v err %v", scores, err)
	}
	if scores, _ := r.GetEpss("CVE-2024-5535"); len(scores) != 0 {
		t.Fatalf("excluded advisory CVE-2024-5535 still has EPSS rows %+v", scores)
	}
}
