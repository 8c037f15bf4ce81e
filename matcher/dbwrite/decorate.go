package dbwrite

import (
	"fmt"
	"time"

	v6 "github.com/anchore/grype/grype/db/v6"

	"github.com/crowsnest-dev/crowsnest/matcher/dbwrite/advisory"
)

// writeDecorations adds the KEV and EPSS rows (Grype's "vulnerability
// decorators") of the CVEs the advisories cover, once per CVE. Grype looks
// them up by the matched record's CVE ids and writes them into its
// CycloneDX output as ratings and into its JSON output as knownExploited,
// epss and risk.
func writeDecorations(w v6.ReadWriter, advs []advisory.Advisory) error {
	epssDate, err := time.Parse(time.DateOnly, advisory.EPSSDate)
	if err != nil {
		return fmt.Errorf("EPSS date: %w", err)
	}
	seen := map[string]bool{}
	for _, a := range advs {
		for _, cve := range a.CVEs() {
			if seen[cve] {
				continue
			}
			seen[cve] = true
			if k, ok := advisory.Exploited(cve); ok {
				h, err := kevHandle(k)
				if err != nil {
					return err
				}
				if err := w.AddKnownExploitedVulnerabilities(h); err != nil {
					return fmt.Errorf("add KEV %s: %w", cve, err)
				}
			}
			if e, ok := advisory.Scored(cve); ok {
				h := &v6.EpssHandle{Cve: cve, Epss: e.Score, Percentile: e.Percentile, Date: epssDate}
				if err := w.AddEpss(h); err != nil {
					return fmt.Errorf("add EPSS %s: %w", cve, err)
				}
			}
		}
	}
	return nil
}

func kevHandle(k advisory.KEV) (*v6.KnownExploitedVulnerabilityHandle, error) {
	added, err := time.Parse(time.DateOnly, k.DateAdded)
	if err != nil {
		return nil, fmt.Errorf("KEV %s date added: %w", k.CVE, err)
	}
	due, err := time.Parse(time.DateOnly, k.DueDate)
	if err != nil {
		return nil, fmt.Errorf("KEV %s due date: %w", k.CVE, err)
	}
	return &v6.KnownExploitedVulnerabilityHandle{
		Cve: k.CVE,
		BlobValue: &v6.KnownExploitedVulnerabilityBlob{
			Cve: k.CVE, VendorProject: k.VendorProject, Product: k.Product,
			DateAdded: &added, DueDate: &due, KnownRansomwareCampaignUse: k.Ransomware,
			RequiredAction: k.RequiredAction,
			URLs:           []string{"https://www.cisa.gov/known-exploited-vulnerabilities-catalog"},
		},
	}, nil
}
