package advisory

import "fmt"

// SyntheticPackages is how many distinct synthetic apk packages the large
// fixture image installs; synthetic advisory i affects package i mod this.
const SyntheticPackages = 400

// SyntheticPackage names synthetic package i; the large fixture installs
// these at version SyntheticInstalled.
func SyntheticPackage(i int) string { return fmt.Sprintf("crowsnest-synth-%03d", i%SyntheticPackages) }

// SyntheticInstalled is the version of every synthetic package installed.
const SyntheticInstalled = "1.0.0-r0"

var syntheticSeverities = []string{"critical", "high", "high", "medium", "medium", "medium", "low", "negligible", ""}

// Synthetic returns n generated advisories for the large benchmark fixture.
// They are NOT real: ids use the year 2099, the provider is
// ProviderSynthetic, and they only affect crowsnest-synth-* packages, which no
// real image contains. Every third one has no fix.
func Synthetic(n int) []Advisory {
	out := make([]Advisory, 0, n)
	for i := range n {
		id := fmt.Sprintf("CVE-2099-%05d", i+1)
		a := Advisory{
			ID:       id,
			Provider: ProviderSynthetic,
			Severity: syntheticSeverities[i%len(syntheticSeverities)],
			Description: fmt.Sprintf("Synthetic advisory %d for benchmarks: a made-up flaw in %s "+
				"that lets a made-up attacker do made-up things. Not a real vulnerability.", i+1, SyntheticPackage(i)),
			URL: "https://example.invalid/crowsnest/synthetic/" + id,
		}
		if a.Severity != "" && a.Severity != "negligible" {
			a.CVSS = []string{syntheticVectors[i%len(syntheticVectors)]}
		}
		aff := Affected{OS: Alpine318, Ecosystem: EcosystemApk, Name: SyntheticPackage(i)}
		if i%3 != 2 {
			aff.Fixed = fmt.Sprintf("1.0.%d-r0", i/SyntheticPackages+1)
			aff.Constraint = "< " + aff.Fixed
		}
		a.Affected = []Affected{aff}
		out = append(out, a)
	}
	return out
}

var syntheticVectors = []string{netAll, netHighA, netLowA, localHigh, localUIA}
