package report

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/crowsnest-dev/crowsnest/api/finding"
)

// ErrInvalidDigest is returned for anything that is not sha256:<64 lowercase hex>.
var ErrInvalidDigest = errors.New("invalid digest")

// ParseDigest checks that s is an image digest of the form
// sha256:<64 lowercase hex> and returns it unchanged.
func ParseDigest(s string) (string, error) {
	const prefix = "sha256:"
	if len(s) != len(prefix)+64 || !strings.HasPrefix(s, prefix) {
		return "", fmt.Errorf("%w: want sha256:<64 lowercase hex>, got %q", ErrInvalidDigest, clip(s, 100))
	}
	for _, c := range s[len(prefix):] {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return "", fmt.Errorf("%w: want sha256:<64 lowercase hex>, got %q", ErrInvalidDigest, clip(s, 100))
		}
	}
	return s, nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// Severity is a finding's severity (the contract's finding.Severity: one
// rule for results-api and the matcher), ordered so that a larger value is
// worse.
type Severity = finding.Severity

// Severities, worst last.
const (
	Unknown    = finding.Unknown
	Negligible = finding.Negligible
	Low        = finding.Low
	Medium     = finding.Medium
	High       = finding.High
	Critical   = finding.Critical
)

// ParseSeverity maps an API or CycloneDX severity name to a Severity
// (finding.ParseSeverity: CycloneDX "none", Grype's Negligible, and "info"
// count as negligible).
func ParseSeverity(s string) (Severity, bool) { return finding.ParseSeverity(s) }

// Counts counts findings per severity.
type Counts struct {
	Critical, High, Medium, Low, Negligible, Unknown int
}

// Add counts one finding of severity s.
func (c *Counts) Add(s Severity) {
	switch s {
	case Critical:
		c.Critical++
	case High:
		c.High++
	case Medium:
		c.Medium++
	case Low:
		c.Low++
	case Negligible:
		c.Negligible++
	default:
		c.Unknown++
	}
}

// Max is the worst severity with a non-zero count (Unknown when empty).
func (c Counts) Max() Severity {
	switch {
	case c.Critical > 0:
		return Critical
	case c.High > 0:
		return High
	case c.Medium > 0:
		return Medium
	case c.Low > 0:
		return Low
	case c.Negligible > 0:
		return Negligible
	}
	return Unknown
}

// Package and Risk are the contract's (api/finding), which the matcher
// reads re-matched reports with too.
type (
	Package = finding.Package
	Risk    = finding.Risk
)

// Finding is one vulnerability in one affected component: the contract's
// finding.Finding as the store reads it, with its lifecycle.
type Finding struct {
	ID          string
	Source      string
	Severity    Severity
	CVSSScore   *float64
	CVSSVector  string
	Package     Package
	FixedIn     []string
	Description string
	URL         string
	Risk        Risk
	// Seen is when the store first saw the finding in its digest; zero
	// for a finding not read from the store (an upload being parsed).
	Seen Seen
}

// Seen is a stored finding's lifecycle: when its digest's reports first
// held it and when they first listed it in CISA KEV.
type Seen struct {
	FirstSeen time.Time
	// KEVSince is when a report of the digest first listed the finding in
	// CISA KEV (zero when it is not listed): the start of the KEV SLA.
	KEVSince time.Time
}

// Key returns f's FindingKey.
func (f *Finding) Key() FindingKey {
	return FindingKey{ID: f.ID, Name: f.Package.Name, Version: f.Package.Version, Type: f.Package.Type}
}

// Fixable reports whether a fixed version is known.
func (f Finding) Fixable() bool { return len(f.FixedIn) > 0 }

// Summary is what lists show of a report; it never includes the raw BOM.
type Summary struct {
	Digest       string
	Image        string
	ScannedAt    time.Time
	StoredAt     time.Time
	GrypeVersion string
	DBBuilt      string
	DBSchema     string
	// MatchedAt is when the findings were last matched against a DB: the
	// report's write, or a later DB record that left them unchanged
	// (zero when unknown).
	MatchedAt time.Time
	// Cause says why the report was written. The HTTP layer sets
	// CauseRematch for the rematch scope and leaves it empty otherwise;
	// the store then decides scan (no report yet) or rescan.
	Cause    Cause
	Counts   Counts
	Fixable  int
	Findings int
	// FindingsFingerprint is the stored findings' finding.Fingerprint (nil
	// for reports stored before results-api kept it).
	FindingsFingerprint []byte
	// KEV counts the findings listed in CISA's KEV catalog; MaxRisk is the
	// highest Grype risk score of a finding (0 when none is rated).
	KEV     int
	MaxRisk float64
	// MaxEPSS is the highest EPSS score of a finding (nil when none has one).
	MaxEPSS *float64
	Scan    *ScanStatus
	// RunningIn lists the workloads running the digest now, as far as the
	// reader may see (filled by lists and details only).
	RunningIn []Workload
}

// Workload is one workload running a digest: its containers on it and
// their running Pods.
type Workload struct {
	Namespace, Kind, Name string
	Containers            []string
	Pods                  int
}

// Report is a parsed upload: the summary, its findings and the original bytes.
type Report struct {
	Summary
	FindingList []Finding
	Raw         []byte
	// Frame is Raw as one zstd frame when it was uploaded so
	// (ingest.Wire.Frame), FrameWindow the window its decoder holds: the
	// store keeps the frame as it came when that window is within its
	// bound, rather than compress Raw again.
	Frame       []byte
	FrameWindow int64
	// Warnings are ingest's notes about the upload for the uploader (such
	// as a BOM timestamp in the future, clamped); they are not stored.
	Warnings []string
}

// ScanState is where a digest's scan stands.
type ScanState string

// Scan states.
const (
	ScanQueued   ScanState = "queued"
	ScanScanning ScanState = "scanning"
	ScanFailed   ScanState = "failed"
	ScanDone     ScanState = "done"
)

// ScanStatus is the latest known scan progress for a digest, kept from the
// operator's events.
type ScanStatus struct {
	Digest, Image, Namespace, Scanner, Job string
	State                                  ScanState
	Reason, Message                        string
	Attempt                                int
	UpdatedAt                              time.Time
	// Redacted is set when the reader may see the digest but not the
	// namespace its scan Job ran in: Namespace, Scanner, Job and Message
	// are then empty (see Redact).
	Redacted bool
}

// Redact clears what names the place the scan ran: its namespace, the
// Scanner and Job there, and the failure text (which may quote them).
// The state, reason, attempt and time stay: they are about the digest.
func (s *ScanStatus) Redact() {
	s.Namespace, s.Scanner, s.Job, s.Message, s.Redacted = "", "", "", "", true
}
