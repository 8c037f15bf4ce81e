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
}

// Fixable reports whether a fixed version is known.
func (f *Finding) Fixable() bool { return len(f.FixedIn) > 0 }
