package resultsclient

import "time"

// The types below mirror the parts of results-api/api/openapi.yaml the plugin
// reads. results-api's generated types package imports its internals, so it
// is not imported here.

// SeverityCounts counts findings per severity.
type SeverityCounts struct {
	Critical   int `json:"critical"`
	High       int `json:"high"`
	Medium     int `json:"medium"`
	Low        int `json:"low"`
	Negligible int `json:"negligible"`
	Unknown    int `json:"unknown"`
}

// Workload is one workload running an image (runningIn in the API).
type Workload struct {
	Namespace  string   `json:"namespace"`
	Kind       string   `json:"kind"`
	Name       string   `json:"name"`
	Containers []string `json:"containers,omitempty"`
	Pods       int      `json:"pods"`
}

// ReportSummary is one image's report without its findings.
type ReportSummary struct {
	Digest       string         `json:"digest"`
	Image        string         `json:"image"`
	ScannedAt    time.Time      `json:"scannedAt"`
	StoredAt     time.Time      `json:"storedAt"`
	GrypeVersion string         `json:"grypeVersion"`
	DBBuilt      string         `json:"dbBuilt"`
	DBSchema     string         `json:"dbSchema,omitempty"`
	Cause        string         `json:"cause"`
	Counts       SeverityCounts `json:"counts"`
	Fixable      int            `json:"fixable"`
	Findings     int            `json:"findings"`
	// RunningIn is nil when the server does not report where images run
	// (a results-api from before the inventory); see HasRunningIn.
	RunningIn *[]Workload `json:"runningIn,omitempty"`
}

// ReportList is one page of report summaries.
type ReportList struct {
	Items      []ReportSummary `json:"items"`
	NextCursor string          `json:"nextCursor,omitempty"`
	Total      int             `json:"total"`
}

// Package is the package a finding is in.
type Package struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Type    string `json:"type"`
	PURL    string `json:"purl"`
}

// Finding is one vulnerability in one package.
type Finding struct {
	ID          string   `json:"id"`
	Source      string   `json:"source"`
	Severity    string   `json:"severity"`
	CVSSScore   *float64 `json:"cvssScore,omitempty"`
	CVSSVector  string   `json:"cvssVector,omitempty"`
	Package     Package  `json:"package"`
	FixedIn     []string `json:"fixedIn"`
	Fixable     bool     `json:"fixable"`
	Description string   `json:"description,omitempty"`
	URL         string   `json:"url,omitempty"`
}

// ReportDetail is a report with its findings (every page, once Report
// has followed the cursors).
type ReportDetail struct {
	Digest             string         `json:"digest"`
	Image              string         `json:"image"`
	ScannedAt          time.Time      `json:"scannedAt"`
	StoredAt           time.Time      `json:"storedAt"`
	GrypeVersion       string         `json:"grypeVersion"`
	DBBuilt            string         `json:"dbBuilt"`
	DBSchema           string         `json:"dbSchema,omitempty"`
	Cause              string         `json:"cause"`
	Counts             SeverityCounts `json:"counts"`
	Fixable            int            `json:"fixable"`
	FindingCount       int            `json:"findingCount"`
	Findings           []Finding      `json:"findings"`
	FindingsNextCursor string         `json:"findingsNextCursor,omitempty"`
	RunningIn          *[]Workload    `json:"runningIn,omitempty"`
}

// AffectedImage is an image carrying a vulnerability.
type AffectedImage struct {
	Digest    string      `json:"digest"`
	Image     string      `json:"image"`
	Package   string      `json:"package"`
	Version   string      `json:"version"`
	FixedIn   []string    `json:"fixedIn"`
	RunningIn *[]Workload `json:"runningIn,omitempty"`
}

// Vulnerability is a vulnerability and the images carrying it.
type Vulnerability struct {
	ID          string          `json:"id"`
	Severity    string          `json:"severity"`
	Description string          `json:"description,omitempty"`
	URL         string          `json:"url,omitempty"`
	Images      []AffectedImage `json:"images"`
}

// ChangedFinding is a finding new in, or resolved by, a report.
type ChangedFinding struct {
	ID       string   `json:"id"`
	Severity string   `json:"severity"`
	Package  Package  `json:"package"`
	FixedIn  []string `json:"fixedIn,omitempty"`
	KEV      bool     `json:"kev,omitempty"` // listed in CISA KEV
}

// Change is what one report changed in its digest's findings.
type Change struct {
	ID             int64            `json:"id"`
	Digest         string           `json:"digest"`
	Image          string           `json:"image"`
	Cause          string           `json:"cause"`
	DBBuilt        string           `json:"dbBuilt"`
	ChangedAt      time.Time        `json:"changedAt"`
	Baseline       bool             `json:"baseline"`
	NewCounts      SeverityCounts   `json:"newCounts"`
	ResolvedCounts SeverityCounts   `json:"resolvedCounts"`
	KEVAddedCount  int              `json:"kevAddedCount"`
	New            []ChangedFinding `json:"new"`
	Resolved       []ChangedFinding `json:"resolved"`
	KEVAdded       []ChangedFinding `json:"kevAdded"`
	Truncated      bool             `json:"truncated"`
}

// ChangeList is one page of changes.
type ChangeList struct {
	Items      []Change `json:"items"`
	NextCursor string   `json:"nextCursor,omitempty"`
}

// Severities lists the severities worst first, as the API names them.
var Severities = []string{"critical", "high", "medium", "low", "negligible", "unknown"}

// SeverityRank orders severities: 0 is the worst; an unknown name ranks last.
func SeverityRank(s string) int {
	for i, v := range Severities {
		if v == s {
			return i
		}
	}
	return len(Severities)
}
