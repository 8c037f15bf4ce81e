package advisory

// Provider names follow the ids of Grype's upstream feeds (vunnel providers),
// so the records look in the DB the way Grype's published DB does.
const (
	ProviderAlpine = "alpine"
	ProviderDebian = "debian"
	ProviderGitHub = "github"
	ProviderNVD    = "nvd"
	// ProviderSynthetic marks generated benchmark records; never real data.
	ProviderSynthetic = "crowsnest-synthetic"
)

// Package ecosystems as Grype's DB names them (syft package types).
const (
	EcosystemApk = "apk"
	EcosystemDeb = "deb"
	EcosystemGo  = "go-module"
	EcosystemNpm = "npm"
)

// Advisory is one vulnerability record of one provider: an alpine secdb or
// Debian tracker entry for a CVE, a GitHub advisory (GHSA), or an NVD record
// that only carries CVSS (Grype shows it as a related vulnerability).
type Advisory struct {
	ID          string // CVE-… or GHSA-…
	Provider    string
	Aliases     []string // CVE ids of a GHSA
	Severity    string   // critical, high, medium, low, negligible; empty = unknown
	CVSS        []string // CVSS v3.x vectors, e.g. "CVSS:3.1/AV:N/…"
	Description string
	URL         string
	Published   string // YYYY-MM-DD
	Affected    []Affected
	// CPEs are NVD-style affected CPE rows (Grype's CPE matching).
	CPEs []AffectedCPE
}

// AffectedCPE is one affected CPE (application part) and version range.
type AffectedCPE struct {
	Vendor, Product string
	Constraint      string // e.g. "< 2.0.0"; empty = every version
	Fixed           string
}

// Affected is one package an advisory applies to.
type Affected struct {
	OS         *OS    // nil for language ecosystems
	Ecosystem  string // EcosystemApk, EcosystemDeb, EcosystemGo, EcosystemNpm
	Name       string // source/origin package name for distros
	Constraint string // affected range in the ecosystem's version syntax
	Fixed      string // fixed version; empty = no fix
	WontFix    bool   // the distro decided not to fix (Debian "ignored"/"unimportant")
}

// OS identifies a distro release the way Grype's DB does.
type OS struct {
	Name, Major, Minor, Codename string
}

// Distro releases used by the fixture and demo images.
var (
	Alpine318  = &OS{Name: "alpine", Major: "3", Minor: "18"}
	Bookworm12 = &OS{Name: "debian", Major: "12", Codename: "bookworm"}
)

// All returns the real advisories followed by n synthetic ones.
func All(synthetic int) []Advisory {
	out := append([]Advisory(nil), Real...)
	return append(out, Synthetic(synthetic)...)
}
