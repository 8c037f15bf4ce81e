package advisory

import (
	"strconv"
	"strings"
)

// KEV is one entry of CISA's Known Exploited Vulnerabilities catalog, as
// Grype's v6 DB stores it (KnownExploitedVulnerabilityBlob).
type KEV struct {
	CVE           string
	VendorProject string
	Product       string
	DateAdded     string // YYYY-MM-DD
	DueDate       string // YYYY-MM-DD: the remediation deadline for US federal agencies
	// Ransomware is CISA's knownRansomwareCampaignUse: "Known" or "Unknown".
	Ransomware     string
	RequiredAction string
}

// EPSS is one FIRST EPSS score: the probability of exploitation activity in
// the next 30 days and its percentile among all scored CVEs.
type EPSS struct {
	CVE        string
	Score      float64
	Percentile float64
}

// EPSSDate is the day the EPSS rows below are scored for; Grype's DB keeps
// one date for all of them.
const EPSSDate = "2026-10-31"

// kev lists the catalog entries of the real advisories. CVE-2023-4911
// (glibc "Looney Tunables") is in CISA's catalog since 2023-11-21 with a due
// date of 2023-12-12.
var kev = []KEV{
	{CVE: "CVE-2023-4911", VendorProject: "GNU", Product: "GNU C Library", DateAdded: "2023-11-21", DueDate: "2023-12-12",
		Ransomware: "Unknown", RequiredAction: "Apply mitigations per vendor instructions or discontinue use of the product if mitigations are unavailable."},
}

// epss scores some of the real advisories. The values are of the order FIRST
// published for these CVEs but are NOT a transcription of one day's feed
// (scores move daily): they exist so that Grype's EPSS ratings and risk
// score show up in the fixtures and the demo. Advisories not listed have no
// EPSS row, as CVEs missing from a feed do.
var epss = []EPSS{
	{CVE: "CVE-2023-4911", Score: 0.78, Percentile: 0.99},
	{CVE: "CVE-2023-48795", Score: 0.61, Percentile: 0.98},
	{CVE: "CVE-2023-39325", Score: 0.12, Percentile: 0.95},
	{CVE: "CVE-2024-5535", Score: 0.024, Percentile: 0.84},
	{CVE: "CVE-2023-5363", Score: 0.011, Percentile: 0.77},
	{CVE: "CVE-2020-8203", Score: 0.034, Percentile: 0.87},
	{CVE: "CVE-2021-44906", Score: 0.009, Percentile: 0.75},
	{CVE: "CVE-2023-45853", Score: 0.004, Percentile: 0.62},
	{CVE: "CVE-2023-3817", Score: 0.002, Percentile: 0.51},
}

// Exploited returns the KEV entry of cve, if it is listed. Synthetic CVEs
// (CVE-2099-*) get made-up entries: every 40th is listed, every third listed
// one with known ransomware use.
func Exploited(cve string) (KEV, bool) {
	if n, ok := syntheticNumber(cve); ok {
		if n%40 != 0 {
			return KEV{}, false
		}
		k := KEV{CVE: cve, VendorProject: "Crowsnest", Product: "synthetic", DateAdded: "2026-09-01", DueDate: "2026-09-22",
			Ransomware: "Unknown", RequiredAction: "Synthetic: not a real catalog entry."}
		if n%120 == 0 {
			k.Ransomware = "Known"
		}
		return k, true
	}
	for _, k := range kev {
		if k.CVE == cve {
			return k, true
		}
	}
	return KEV{}, false
}

// Scored returns the EPSS row of cve, if it has one. Every synthetic CVE
// gets a made-up score spread over [0, 1).
func Scored(cve string) (EPSS, bool) {
	if n, ok := syntheticNumber(cve); ok {
		p := float64(n*7919%1000) / 1000
		return EPSS{CVE: cve, Score: p * p * p, Percentile: p}, true
	}
	for _, e := range epss {
		if e.CVE == cve {
			return e, true
		}
	}
	return EPSS{}, false
}

// CVEs returns the CVE ids an advisory covers: its own id when it is a CVE,
// and its aliases (a GHSA's CVE), as Grype looks decorations up.
func (a Advisory) CVEs() []string {
	var out []string
	if strings.HasPrefix(a.ID, "CVE-") {
		out = append(out, a.ID)
	}
	for _, al := range a.Aliases {
		if strings.HasPrefix(al, "CVE-") {
			out = append(out, al)
		}
	}
	return out
}

func syntheticNumber(cve string) (int, bool) {
	rest, ok := strings.CutPrefix(cve, "CVE-2099-")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil
}
