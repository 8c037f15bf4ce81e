package report

import "github.com/crowsnest-dev/crowsnest/api/finding"

// FromContract is f as results-api's Finding. The contract (api/finding)
// says how a CycloneDX report's findings are read and fingerprinted, for
// results-api and the matcher alike; results-api's Finding adds what the
// store knows of it (Seen).
func FromContract(f *finding.Finding) Finding {
	return Finding{ID: f.ID, Source: f.Source, Severity: f.Severity, CVSSScore: f.CVSSScore,
		CVSSVector: f.CVSSVector, Package: f.Package, FixedIn: f.FixedIn, Description: f.Description, URL: f.URL, Risk: f.Risk}
}

// ToContract is fs as the contract's findings (for finding.Fingerprint).
func ToContract(fs []Finding) []finding.Finding {
	out := make([]finding.Finding, len(fs))
	for i := range fs {
		f := &fs[i]
		out[i] = finding.Finding{ID: f.ID, Source: f.Source, Severity: f.Severity, CVSSScore: f.CVSSScore,
			CVSSVector: f.CVSSVector, Package: f.Package, FixedIn: f.FixedIn, Description: f.Description, URL: f.URL,
			Risk: f.Risk}
	}
	return out
}
