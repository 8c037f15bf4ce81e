package finding

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	cdx "github.com/CycloneDX/cyclonedx-go"
)

// Errors of Of.
var (
	// ErrNoID: a vulnerability without an id.
	ErrNoID = errors.New("vulnerability has no id")
	// ErrTooMany: more findings than the caller's bound.
	ErrTooMany = errors.New("too many findings")
)

// Of reads the findings of a CycloneDX BOM: one per vulnerability and
// affected component (a vulnerability without one counts once; the same
// id and component twice count once), in document order. The severity is
// the first rating that names one, the CVSS score and vector those of the
// newest CVSS method rated, the URL the first advisory's or else the
// source's, and FixedIn Grype's fix records (sorted). Of fails with
// ErrNoID for a vulnerability without an id and ErrTooMany past max
// findings (max <= 0: no bound).
func Of(bom *cdx.BOM, max int) ([]Finding, error) {
	if bom.Vulnerabilities == nil {
		return nil, nil
	}
	comps := componentIndex(bom)
	seen := map[[2]string]bool{}
	var out []Finding
	for i, v := range *bom.Vulnerabilities {
		if strings.TrimSpace(v.ID) == "" {
			return nil, fmt.Errorf("%w: vulnerabilities[%d]", ErrNoID, i)
		}
		for _, a := range affectsRefs(v) {
			key := [2]string{v.ID, a.Ref}
			if seen[key] {
				continue
			}
			seen[key] = true
			if max > 0 && len(out) == max {
				return nil, fmt.Errorf("%w: more than %d", ErrTooMany, max)
			}
			out = append(out, finding(v, a, comps))
		}
	}
	return out, nil
}

func componentIndex(bom *cdx.BOM) map[string]*cdx.Component {
	idx := map[string]*cdx.Component{}
	var walk func(cs *[]cdx.Component)
	walk = func(cs *[]cdx.Component) {
		if cs == nil {
			return
		}
		for i := range *cs {
			c := &(*cs)[i]
			if c.BOMRef != "" {
				idx[c.BOMRef] = c
			}
			walk(c.Components)
		}
	}
	walk(bom.Components)
	return idx
}

func affectsRefs(v cdx.Vulnerability) []cdx.Affects {
	if v.Affects == nil || len(*v.Affects) == 0 {
		// A vulnerability without an affected component still counts once.
		return []cdx.Affects{{}}
	}
	return *v.Affects
}

func finding(v cdx.Vulnerability, a cdx.Affects, comps map[string]*cdx.Component) Finding {
	f := Finding{ID: v.ID, Description: v.Description}
	if v.Source != nil {
		f.Source = v.Source.Name
		f.URL = v.Source.URL
	}
	if v.Advisories != nil && len(*v.Advisories) > 0 && (*v.Advisories)[0].URL != "" {
		f.URL = (*v.Advisories)[0].URL
	}
	f.Severity, f.CVSSScore, f.CVSSVector = ratings(v.Ratings)
	f.Risk = risk(v, f.Severity)
	if c, ok := comps[a.Ref]; ok {
		f.Package = Package{Name: c.Name, Version: c.Version, PURL: c.PackageURL, Type: PURLType(c.PackageURL)}
	} else {
		f.Package.Name = a.Ref
	}
	f.FixedIn = fixedVersions(a)
	return f
}

// ratings picks the severity (the first rating that names one; CycloneDX
// "none" is Grype's Negligible) and the CVSS score and vector of the newest
// CVSS method present. EPSS, KEV and other scores are not CVSS.
func ratings(rs *[]cdx.VulnerabilityRating) (Severity, *float64, string) {
	sev := Unknown
	var score *float64
	vector, rank := "", 0
	if rs == nil {
		return sev, nil, ""
	}
	for _, r := range *rs {
		if s, ok := ParseSeverity(string(r.Severity)); ok && s != Unknown && sev == Unknown {
			sev = s
		}
		if k := cvssRank(r.Method); k > rank && r.Score != nil {
			v := *r.Score
			score, vector, rank = &v, r.Vector, k
		}
	}
	return sev, score, vector
}

func cvssRank(m cdx.ScoringMethod) int {
	switch m {
	case cdx.ScoringMethodCVSSv31:
		return 4
	case cdx.ScoringMethodCVSSv3:
		return 3
	case cdx.ScoringMethodCVSSv4:
		return 2
	case cdx.ScoringMethodCVSSv2:
		return 1
	}
	return 0
}

// fixedVersions reads Grype's fix records: versions with status "unaffected"
// and a vers range such as "vers:apk/>=1.2.3-r1".
func fixedVersions(a cdx.Affects) []string {
	if a.Range == nil {
		return nil
	}
	var out []string
	for _, av := range *a.Range {
		if av.Status != cdx.VulnerabilityStatusNotAffected {
			continue
		}
		v := av.Version
		if v == "" && av.Range != "" {
			rng := av.Range
			if i := strings.Index(rng, "/"); strings.HasPrefix(rng, "vers:") && i >= 0 {
				rng = rng[i+1:]
			}
			v = strings.TrimLeft(rng, ">=")
		}
		if v != "" {
			out = append(out, v)
		}
	}
	sort.Strings(out)
	return out
}

// PURLType is the type of a package URL ("apk" of pkg:apk/alpine/zlib@…),
// empty when purl is not one.
func PURLType(purl string) string {
	rest, ok := strings.CutPrefix(purl, "pkg:")
	if !ok {
		return ""
	}
	t, _, _ := strings.Cut(rest, "/")
	return t
}
