package report

import (
	"cmp"
	"slices"
	"time"
)

// Cause says why a report was written. It is decided by results-api from
// the writer (its write scope and whether the digest had a report), never
// from the uploaded body.
type Cause string

// Causes.
const (
	CauseScan    Cause = "scan"    // the digest's first report
	CauseRescan  Cause = "rescan"  // a later scan of a digest that had a report
	CauseRematch Cause = "rematch" // the matcher re-matching the stored SBOM (rematch scope)
)

// ParseCause maps an API cause name to a Cause.
func ParseCause(s string) (Cause, bool) {
	switch c := Cause(s); c {
	case CauseScan, CauseRescan, CauseRematch:
		return c, true
	}
	return "", false
}

// FindingKey identifies a finding across the reports of one digest: the
// same vulnerability in the same package is the same finding, whatever its
// severity, score or fix says in either report.
type FindingKey struct {
	ID, Name, Version, Type string
}

// Key returns f's FindingKey.
func (f *Finding) Key() FindingKey {
	return FindingKey{ID: f.ID, Name: f.Package.Name, Version: f.Package.Version, Type: f.Package.Type}
}

// ChangedFinding is a finding that is new in, or resolved by, a report.
type ChangedFinding struct {
	FindingKey
	Severity Severity
	FixedIn  []string
}

// Change is what a report changed in its digest's findings, against the
// report it replaced.
type Change struct {
	ID        int64 // assigned by the store
	Digest    string
	Image     string
	Cause     Cause
	DBBuilt   string
	DBSchema  string
	ChangedAt time.Time
	// Baseline marks a digest's first report: NewCounts counts its
	// findings and none are listed.
	Baseline       bool
	NewCounts      Counts
	ResolvedCounts Counts
	// New and Resolved are worst first, then by key. A page of changes
	// may hold only part of them (Truncated).
	New, Resolved []ChangedFinding
	Truncated     bool
}

// Max is the worst severity among the change's new and resolved findings
// (Unknown when it has none).
func (c *Change) Max() Severity { return max(c.NewCounts.Max(), c.ResolvedCounts.Max()) }

// Empty reports whether the change has neither new nor resolved findings
// and is not a baseline: such a change is not recorded.
func (c *Change) Empty() bool {
	return !c.Baseline && c.NewCounts == (Counts{}) && c.ResolvedCounts == (Counts{})
}

// Changed returns the finding as a ChangedFinding.
func (f *Finding) Changed() ChangedFinding {
	return ChangedFinding{FindingKey: f.Key(), Severity: f.Severity, FixedIn: f.FixedIn}
}

// Baseline is the change of a digest's first report: counts only.
func Baseline(next []Finding) Change {
	var c Change
	c.Baseline = true
	for _, f := range keyed(changed(next)) {
		c.NewCounts.Add(f.Severity)
	}
	return c
}

// Diff compares the findings of a digest's previous report (prev, as the
// store keeps them) with the new report's (next) by FindingKey: New holds
// the keys only next has, Resolved the keys only prev has, each worst
// first. A key that is in both is no change, even if its severity or fix
// differs (the report itself, and report.stored's counts, show those).
// A key listed twice in one report (the same package found at two
// locations) counts once, with its worst severity.
func Diff(prev []ChangedFinding, next []Finding) Change {
	p, n := keyed(prev), keyed(changed(next))
	var c Change
	for k, f := range n {
		if _, ok := p[k]; !ok {
			c.New = append(c.New, f)
			c.NewCounts.Add(f.Severity)
		}
	}
	for k, f := range p {
		if _, ok := n[k]; !ok {
			c.Resolved = append(c.Resolved, f)
			c.ResolvedCounts.Add(f.Severity)
		}
	}
	SortChanged(c.New)
	SortChanged(c.Resolved)
	return c
}

func changed(fs []Finding) []ChangedFinding {
	out := make([]ChangedFinding, len(fs))
	for i := range fs {
		out[i] = fs[i].Changed()
	}
	return out
}

// keyed indexes findings by key, keeping the worst of a repeated key.
func keyed(fs []ChangedFinding) map[FindingKey]ChangedFinding {
	m := make(map[FindingKey]ChangedFinding, len(fs))
	for _, f := range fs {
		if have, ok := m[f.FindingKey]; !ok || f.Severity > have.Severity {
			m[f.FindingKey] = f
		}
	}
	return m
}

// SortChanged orders changed findings worst first, then by key.
func SortChanged(fs []ChangedFinding) {
	slices.SortFunc(fs, func(a, b ChangedFinding) int {
		return cmp.Or(cmp.Compare(b.Severity, a.Severity), cmp.Compare(a.ID, b.ID), cmp.Compare(a.Name, b.Name),
			cmp.Compare(a.Version, b.Version), cmp.Compare(a.Type, b.Type))
	})
}
