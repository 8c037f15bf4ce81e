// Package finding is the contract of what a finding is in a Grype
// CycloneDX report and when two reports hold the same findings: results-api
// reads a report's findings with Of and stores their Fingerprint next to
// them; the matcher reads the findings of a re-matched report the same way
// and compares their Fingerprint with the stored one to tell whether the
// report changed, without fetching or decoding the stored findings.
//
// Both sides must agree on every byte: a change to Of or Fingerprint makes
// every stored fingerprint differ from a fresh one (each report is then
// re-uploaded once by the next re-match pass). finding_test.go pins a
// fingerprint.
package finding
