package finding

import "strings"

// Severity is a finding's severity, ordered so that a larger value is
// worse. Its numeric values are part of the fingerprint.
type Severity int

// Severities, worst last.
const (
	Unknown Severity = iota
	Negligible
	Low
	Medium
	High
	Critical
)

var severityNames = [...]string{"unknown", "negligible", "low", "medium", "high", "critical"}

func (s Severity) String() string {
	if s < Unknown || s > Critical {
		return "unknown"
	}
	return severityNames[s]
}

// ParseSeverity maps an API or CycloneDX severity name to a Severity.
// CycloneDX "none" (Grype's Negligible) and "info" count as negligible.
func ParseSeverity(s string) (Severity, bool) {
	switch strings.ToLower(s) {
	case "critical":
		return Critical, true
	case "high":
		return High, true
	case "medium", "moderate":
		return Medium, true
	case "low":
		return Low, true
	case "negligible", "none", "info":
		return Negligible, true
	case "unknown", "":
		return Unknown, true
	}
	return Unknown, false
}

// Package is the affected software component of a finding.
type Package struct {
	Name, Version, Type, PURL string
}

// Finding is one vulnerability in one affected component.
type Finding struct {
	ID          string
	Source      string
	Severity    Severity
	CVSSScore   *float64
	CVSSVector  string
	Package     Package
	FixedIn     []string // sorted
	Description string
	URL         string
	Risk        Risk
}

// Risk is what Grype's CycloneDX says about a finding's exploitation: an
// EPSS rating (source "FIRST"), a CISA KEV listing (source "CISA KEV
// Catalog") and, computed from them, Grype's risk score. Grype's CycloneDX
// carries no EPSS percentile or date, no KEV dates and no ransomware use.
type Risk struct {
	EPSS *float64 // EPSS probability in [0, 1]; nil when the DB has no score
	KEV  bool     // listed in CISA's Known Exploited Vulnerabilities catalog
	// Score is Grype's risk score in [0, 100] (vulnerability.Metadata's
	// RiskScore): threat (1 when KEV-listed, else EPSS) × severity, with a
	// boost for KEV. Zero without EPSS or KEV.
	Score float64
}

// Rated reports whether Grype rated the finding's exploitation at all.
func (r Risk) Rated() bool { return r.EPSS != nil || r.KEV || r.Score != 0 }

// Fixable reports whether a fixed version is known.
func (f *Finding) Fixable() bool { return len(f.FixedIn) > 0 }
