package finding

// Key identifies a finding across the reports of one digest: the same
// vulnerability in the same package is the same finding, whatever its
// severity, score or fix says in either report. results-api diffs stored
// reports by it and the matcher decides by it whether a re-match changed
// anything.
type Key struct {
	ID      string // vulnerability id, e.g. CVE-2024-5535 or GHSA-…
	Name    string // package name
	Version string // package version
	Type    string // package type from the purl (apk, deb, golang, npm, …)
}

// Key returns f's Key.
func (f *Finding) Key() Key {
	return Key{ID: f.ID, Name: f.Package.Name, Version: f.Package.Version, Type: f.Package.Type}
}
