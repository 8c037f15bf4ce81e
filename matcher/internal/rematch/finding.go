package rematch

import (
	"cmp"
	"math"
	"slices"

	cdx "github.com/CycloneDX/cyclonedx-go"

	"github.com/crowsnest-dev/crowsnest/api/finding"
)

// Key identifies a finding: a vulnerability in one package (the
// contract's finding.Key, which results-api diffs reports by).
type Key = finding.Key

// Finding is a Key with its severity, as results-api reads it from a
// report: critical, high, medium, low, negligible or unknown.
type Finding struct {
	Key
	Severity string
}

// FindingsOf reads the findings of a CycloneDX BOM by the contract's rule
// (api/finding.Of, the rule results-api stores them by), as keys with
// their severity, sorted and without duplicates. A BOM the rule refuses
// (a vulnerability without an id: never Grype's output) has none.
func FindingsOf(bom *cdx.BOM) []Finding {
	fs, err := finding.Of(bom, math.MaxInt)
	if err != nil {
		return nil
	}
	out := make([]Finding, 0, len(fs))
	for i := range fs {
		f := &fs[i]
		out = append(out, Finding{Key: f.Key(), Severity: f.Severity.String()})
	}
	slices.SortFunc(out, compareFindings)
	return slices.Compact(out)
}

func compareFindings(a, b Finding) int {
	return cmp.Or(cmp.Compare(a.ID, b.ID), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Version, b.Version),
		cmp.Compare(a.Type, b.Type), cmp.Compare(a.Severity, b.Severity))
}

// SameFindings reports whether a and b (as FindingsOf returns them) hold
// the same keys with the same severities.
func SameFindings(a, b []Finding) bool { return slices.Equal(a, b) }

// Diff returns the keys only in next (new) and only in prev (resolved).
// A key in both with another severity is in neither.
func Diff(prev, next []Finding) (added, resolved []Key) {
	in := func(fs []Finding) map[Key]bool {
		m := make(map[Key]bool, len(fs))
		for _, f := range fs {
			m[f.Key] = true
		}
		return m
	}
	p, n := in(prev), in(next)
	for _, f := range next {
		if !p[f.Key] {
			added = append(added, f.Key)
		}
	}
	for _, f := range prev {
		if !n[f.Key] {
			resolved = append(resolved, f.Key)
		}
	}
	return slices.Compact(added), slices.Compact(resolved)
}
