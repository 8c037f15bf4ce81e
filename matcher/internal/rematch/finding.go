package rematch

import (
	"cmp"
	"slices"
	"strings"

	cdx "github.com/CycloneDX/cyclonedx-go"
	"github.com/anchore/packageurl-go"
)

// Key identifies a finding: a vulnerability in one package.
type Key struct {
	ID      string // vulnerability id, e.g. CVE-2024-5535 or GHSA-…
	Name    string // package name
	Version string // package version
	Type    string // package type from the purl (apk, deb, golang, npm, …)
}

// Finding is a Key with its severity, as results-api reads it from a
// report: critical, high, medium, low, negligible or unknown.
type Finding struct {
	Key
	Severity string
}

// FindingsOf reads the findings of a CycloneDX BOM the way results-api
// does (one per vulnerability and affected component, severity from the
// first rating that names one), sorted and without duplicates.
func FindingsOf(bom *cdx.BOM) []Finding {
	comps := map[string]*cdx.Component{}
	var walk func(cs *[]cdx.Component)
	walk = func(cs *[]cdx.Component) {
		if cs == nil {
			return
		}
		for i := range *cs {
			c := &(*cs)[i]
			if c.BOMRef != "" {
				comps[c.BOMRef] = c
			}
			walk(c.Components)
		}
	}
	walk(bom.Components)

	var out []Finding
	if bom.Vulnerabilities == nil {
		return out
	}
	for _, v := range *bom.Vulnerabilities {
		sev := severity(v.Ratings)
		affects := []cdx.Affects{{}}
		if v.Affects != nil && len(*v.Affects) > 0 {
			affects = *v.Affects
		}
		for _, a := range affects {
			f := Finding{Key: Key{ID: v.ID, Name: a.Ref}, Severity: sev}
			if c, ok := comps[a.Ref]; ok {
				f.Name, f.Version, f.Type = c.Name, c.Version, purlType(c.PackageURL)
			}
			out = append(out, f)
		}
	}
	slices.SortFunc(out, compareFindings)
	return slices.Compact(out)
}

func compareFindings(a, b Finding) int {
	return cmp.Or(cmp.Compare(a.ID, b.ID), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Version, b.Version),
		cmp.Compare(a.Type, b.Type), cmp.Compare(a.Severity, b.Severity))
}

func severity(rs *[]cdx.VulnerabilityRating) string {
	if rs != nil {
		for _, r := range *rs {
			switch s := strings.ToLower(string(r.Severity)); s {
			case "critical", "high", "medium", "low", "negligible":
				return s
			case "none", "info":
				return "negligible"
			}
		}
	}
	return "unknown"
}

func purlType(purl string) string {
	if purl == "" {
		return ""
	}
	p, err := packageurl.FromString(purl)
	if err != nil {
		return ""
	}
	return p.Type
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
