package report

import (
	"cmp"
	"slices"
	"time"

	"github.com/crowsnest-dev/crowsnest/api/finding"
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

// FindingKey identifies a finding across the reports of one digest (the
// contract's finding.Key: the same vulnerability in the same package is
// the same finding).
type FindingKey = finding.Key

// ChangedFinding is a finding that is new in, or resolved by, a report, or
// newly listed in CISA KEV; Risk is its risk data in that report (for a
// resolved finding: in the report before).
type ChangedFinding struct {
	FindingKey
	Severity Severity
	FixedIn  []string
	Risk     Risk
	// PURL is the package URL, for deciding triage exceptions on the
	// change's event; set on the findings of the new report only (not
	// stored with the change).
	PURL string
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
	// KEVAddedCount counts the findings of both reports that the new one
	// lists in CISA KEV and the previous one did not.
	KEVAddedCount int
	// New, Resolved and KEVAdded are worst first (KEV-listed before others
	// of a severity), then by key. A page of changes may hold only part of
	// them (Truncated).
	New, Resolved, KEVAdded []ChangedFinding
	Truncated               bool
}

// Max is the worst severity among the change's new, resolved and listed
// KEV-added findings (Unknown when it has none).
func (c *Change) Max() Severity {
	m := max(c.NewCounts.Max(), c.ResolvedCounts.Max())
	for _, f := range c.KEVAdded {
		m = max(m, f.Severity)
	}
	return m
}

// Empty reports whether the change has no new, resolved or KEV-added
// findings and is not a baseline: such a change is not recorded.
func (c *Change) Empty() bool {
	return !c.Baseline && c.NewCounts == (Counts{}) && c.ResolvedCounts == (Counts{}) && c.KEVAddedCount == 0
}

// ChangedOf returns f as a ChangedFinding.
func ChangedOf(f *Finding) ChangedFinding {
	return ChangedFinding{FindingKey: f.Key(), Severity: f.Severity, FixedIn: f.FixedIn, Risk: f.Risk, PURL: f.Package.PURL}
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
// first. A key that is in both is no change, even if its severity, fix
// or EPSS score differs (the report itself, and report.stored's counts,
// show those), except for a new CISA KEV listing: KEVAdded holds the keys
// of both whose previous finding was not KEV-listed and whose next one is.
// A key listed twice in one report (the same package found at two
// locations) counts once, with its worst severity (KEV-listed when any of
// them is).
func Diff(prev []ChangedFinding, next []Finding) Change {
	p, n := keyed(prev), keyed(changed(next))
	var c Change
	for k, f := range n {
		was, ok := p[k]
		switch {
		case !ok:
			c.New = append(c.New, f)
			c.NewCounts.Add(f.Severity)
		case f.Risk.KEV && !was.Risk.KEV:
			c.KEVAdded = append(c.KEVAdded, f)
		}
	}
	c.KEVAddedCount = len(c.KEVAdded)
	for k, f := range p {
		if _, ok := n[k]; !ok {
			c.Resolved = append(c.Resolved, f)
			c.ResolvedCounts.Add(f.Severity)
		}
	}
	SortChanged(c.New)
	SortChanged(c.Resolved)
	SortChanged(c.KEVAdded)
	return c
}

func changed(fs []Finding) []ChangedFinding {
	out := make([]ChangedFinding, len(fs))
	for i := range fs {
		out[i] = ChangedOf(&fs[i])
	}
	return out
}

// keyed indexes findings by key, keeping the worst of a repeated key
// (the KEV-listed one at equal severity).
func keyed(fs []ChangedFinding) map[FindingKey]ChangedFinding {
	m := make(map[FindingKey]ChangedFinding, len(fs))
	for _, f := range fs {
		if have, ok := m[f.FindingKey]; !ok || worse(f, have) < 0 {
			m[f.FindingKey] = f
		}
	}
	return m
}

// worse orders two findings worst first: by severity, then KEV-listed
// before not.
func worse(a, b ChangedFinding) int {
	return cmp.Or(cmp.Compare(b.Severity, a.Severity), cmpBool(b.Risk.KEV, a.Risk.KEV))
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// SortChanged orders changed findings worst first (by severity, then
// KEV-listed before not), then by key.
func SortChanged(fs []ChangedFinding) {
	slices.SortFunc(fs, func(a, b ChangedFinding) int {
		return cmp.Or(worse(a, b), cmp.Compare(a.ID, b.ID), cmp.Compare(a.Name, b.Name),
			cmp.Compare(a.Version, b.Version), cmp.Compare(a.Type, b.Type))
	})
}
