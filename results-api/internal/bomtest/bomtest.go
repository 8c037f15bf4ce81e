// Package bomtest builds small CONSTRUCTED CycloneDX documents for tests
// and benchmarks. They are shaped like Grype's output (one vulnerability per
// match, one affects ref each, "none" for Negligible, fixes as unaffected
// vers ranges) but are not real Grype output; tests of real output use the
// fixtures in testdata/grype/.
package bomtest

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"

	cdx "github.com/CycloneDX/cyclonedx-go"
)

// Vuln is one constructed match.
type Vuln struct {
	ID       string
	Severity string // critical|high|medium|low|none|unknown
	Package  string // component name; the component is created
	Version  string
	Fix      string // "" = no fix
	Score    float64
	// KEV adds Grype's CISA KEV rating, EPSS (when > 0) its EPSS rating.
	KEV  bool
	EPSS float64
}

// Digest returns a deterministic sha256 digest for n.
func Digest(n int) string { return fmt.Sprintf("sha256:%064x", n) }

// BOM renders the vulnerabilities as a CycloneDX 1.6 JSON document.
func BOM(vulns ...Vuln) []byte {
	comps := []cdx.Component{}
	seen := map[string]bool{}
	var vs []cdx.Vulnerability
	for _, v := range vulns {
		ref := "pkg:apk/alpine/" + v.Package + "@" + v.Version
		if !seen[ref] {
			seen[ref] = true
			comps = append(comps, cdx.Component{BOMRef: ref, Type: cdx.ComponentTypeLibrary, Name: v.Package, Version: v.Version, PackageURL: ref})
		}
		rating := cdx.VulnerabilityRating{Severity: cdx.Severity(v.Severity)}
		if v.Score > 0 {
			s := v.Score
			rating.Score, rating.Method, rating.Vector = &s, cdx.ScoringMethodCVSSv31, "CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H"
		}
		ratings := []cdx.VulnerabilityRating{rating}
		if v.EPSS > 0 {
			e := v.EPSS
			ratings = append(ratings, cdx.VulnerabilityRating{Source: &cdx.Source{Name: "FIRST"}, Score: &e, Method: cdx.ScoringMethodOther})
		}
		if v.KEV {
			ratings = append(ratings, cdx.VulnerabilityRating{Source: &cdx.Source{Name: "CISA KEV Catalog"}, Method: cdx.ScoringMethodOther,
				Justification: "Listed in CISA KEV"})
		}
		rng := []cdx.AffectedVersions{{Version: v.Version, Status: cdx.VulnerabilityStatusAffected}}
		if v.Fix != "" {
			rng = append(rng, cdx.AffectedVersions{Range: "vers:apk/>=" + v.Fix, Status: cdx.VulnerabilityStatusNotAffected})
		}
		vs = append(vs, cdx.Vulnerability{ID: v.ID, Source: &cdx.Source{Name: "alpine-distro-alpine-3.20", URL: "https://example.invalid/" + v.ID},
			Ratings: &ratings, Description: "constructed test vulnerability " + v.ID,
			Affects: &[]cdx.Affects{{Ref: ref, Range: &rng}}})
	}
	bom := cdx.NewBOM()
	bom.SpecVersion = cdx.SpecVersion1_6
	bom.Metadata = &cdx.Metadata{Timestamp: "2026-11-01T10:00:00Z",
		Tools:     &cdx.ToolsChoice{Components: &[]cdx.Component{{Type: cdx.ComponentTypeApplication, Name: "grype", Version: "0.121.2"}}},
		Component: &cdx.Component{Type: cdx.ComponentTypeContainer, Name: "registry.example/demo", Version: Digest(0)}}
	bom.Components = &comps
	bom.Vulnerabilities = &vs
	b, err := json.Marshal(bom)
	if err != nil {
		panic(err)
	}
	return b
}

var sevs = []string{"critical", "high", "medium", "low", "none", "unknown"}

// Random returns n constructed vulnerabilities with a seeded mix of
// severities, packages and fixes.
func Random(seed uint64, n int) []Vuln {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	out := make([]Vuln, n)
	for i := range out {
		v := Vuln{ID: fmt.Sprintf("CVE-%d-%05d", 2015+r.IntN(11), r.IntN(100000)), Severity: sevs[r.IntN(len(sevs))],
			Package: fmt.Sprintf("pkg%03d", r.IntN(300)), Version: fmt.Sprintf("1.%d.%d", r.IntN(20), r.IntN(20)), Score: float64(r.IntN(100)) / 10}
		if r.IntN(2) == 0 {
			v.Fix = "2.0.0"
		}
		out[i] = v
	}
	return out
}

// Sized returns a constructed BOM of at least size bytes.
func Sized(seed uint64, size int) []byte {
	n := size / 700
	for {
		b := BOM(Random(seed, n)...)
		if len(b) >= size {
			return b
		}
		n += n/32 + 1 // small steps: land within ~3% above size
	}
}
