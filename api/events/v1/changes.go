package v1

import (
	"slices"
	"time"
)

// Cause says why results-api stored a report. results-api decides it from
// the writer, never from the uploaded body.
type Cause string

// Causes of a stored report.
const (
	// CauseScan is the first report of a digest, from its scan Job.
	CauseScan Cause = "scan"
	// CauseRescan is a later scan of a digest that already had a report.
	CauseRescan Cause = "rescan"
	// CauseRematch is the matcher matching the stored SBOM again against a
	// newer vulnerability DB (the rematch write scope).
	CauseRematch Cause = "rematch"
)

// MaxChangedFindings caps each of FindingsChanged.New,
// FindingsChanged.Resolved and FindingsChanged.KEVAdded; the full lists are
// served by the REST API at ChangesPath.
const MaxChangedFindings = 100

// ChangedPackage is the affected package of a changed finding. A finding
// is identified across reports of one digest by (vulnerability id,
// package name, version, type).
type ChangedPackage struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Type    string `json:"type"` // purl type: apk, deb, golang, npm, …
}

// ChangedFinding is a finding that appeared in (new) or disappeared from
// (resolved) a digest's report, or that was newly listed in CISA's Known
// Exploited Vulnerabilities catalog (kevAdded).
type ChangedFinding struct {
	ID       string         `json:"id"`       // vulnerability id, e.g. CVE-2026-1234
	Severity string         `json:"severity"` // critical|high|medium|low|negligible|unknown
	Package  ChangedPackage `json:"package"`
	// FixedIn lists the versions that fix it, when known.
	FixedIn []string `json:"fixedIn,omitempty"`
	// KEV is true when the finding is listed in CISA's KEV catalog.
	KEV bool `json:"kev,omitempty"`
	// EPSS is the finding's EPSS probability in [0, 1], when the
	// vulnerability DB has one.
	EPSS *float64 `json:"epss,omitempty"`
	// Risk is Grype's risk score in [0, 100], when the finding has an EPSS
	// score or a KEV listing.
	Risk *float64 `json:"risk,omitempty"`
	// SuppressedEverywhere is true when a cluster-wide triage decision (a
	// ClusterVulnerabilityException, or a not_affected/fixed statement of a
	// ClusterVEXDocument) suppressed the finding when the change was
	// recorded: every namespace's view hides it. Set on new and KEV-added
	// findings only (added in issue 32; absent from older producers and
	// when results-api runs without exceptions).
	SuppressedEverywhere bool `json:"suppressedEverywhere,omitempty"`
	// SuppressedIn lists, sorted, the namespaces running the digest (in
	// results-api's inventory) whose view suppressed the finding when the
	// change was recorded: a namespaced exception or VEX document of that
	// namespace applies. Empty when SuppressedEverywhere is set; at most
	// MaxSuppressedIn (the rest are left out, so they are not suppressed
	// for a consumer). Set on new and KEV-added findings only (issue 32).
	SuppressedIn []string `json:"suppressedIn,omitempty"`
}

// MaxSuppressedIn caps ChangedFinding.SuppressedIn.
const MaxSuppressedIn = 100

// SuppressedFor reports whether f was suppressed in namespace ns's view
// when its change was recorded: by a cluster-wide decision, or by one of
// ns's own.
func (f *ChangedFinding) SuppressedFor(ns string) bool {
	return f.SuppressedEverywhere || slices.Contains(f.SuppressedIn, ns)
}

// FindingsChanged is published by results-api on crowsnest.findings.changed
// when a digest's findings change: in the transaction that stores the new
// report (transactional outbox), once per change, with a deterministic id
// derived from the digest and the change's id.
//
// The first report of a digest is a baseline: Baseline is true, NewCounts
// counts its findings and no finding is listed. A later report that keeps
// exactly the same finding keys publishes nothing, unless one of them was
// not KEV-listed before and is now (KEVAdded): a vulnerability DB update
// that adds a CISA KEV listing to a finding is a change, once.
type FindingsChanged struct {
	// ChangeID is the change's id in the REST API
	// (GET /api/v1/reports/{digest}/changes).
	ChangeID  int64     `json:"changeId"`
	Digest    string    `json:"digest"` // sha256:<64 hex>
	Image     string    `json:"image"`  // repository@sha256:<64 hex>
	Cause     Cause     `json:"cause"`
	DBBuilt   string    `json:"dbBuilt,omitempty"`  // Grype DB build time (RFC 3339) the report was matched with
	DBSchema  string    `json:"dbSchema,omitempty"` // Grype DB schema version, e.g. v6.0.2
	ChangedAt time.Time `json:"changedAt"`
	Baseline  bool      `json:"baseline"`
	// NewCounts and ResolvedCounts count every new and resolved finding by
	// severity, listed or not.
	NewCounts      SeverityCounts `json:"newCounts"`
	ResolvedCounts SeverityCounts `json:"resolvedCounts"`
	// New and Resolved list the changed findings, worst first, at most
	// MaxChangedFindings each; absent on a baseline.
	New      []ChangedFinding `json:"new,omitempty"`
	Resolved []ChangedFinding `json:"resolved,omitempty"`
	// KEVAdded lists findings that were in the previous report without a
	// KEV listing and are KEV-listed now, worst first, at most
	// MaxChangedFindings; KEVAddedCount counts them all.
	KEVAdded      []ChangedFinding `json:"kevAdded,omitempty"`
	KEVAddedCount int              `json:"kevAddedCount,omitempty"`
	// Truncated is true when a list was cut at MaxChangedFindings;
	// ChangesPath (set only then) is the API path that lists them all.
	Truncated   bool   `json:"truncated,omitempty"`
	ChangesPath string `json:"changesPath,omitempty"`
}

// VulnDBUpdated is published by the matcher on crowsnest.vulndb.updated when
// it activates a new Grype vulnerability DB (fetched or imported), before it
// re-matches the stored reports against it.
type VulnDBUpdated struct {
	Built    time.Time `json:"built"`    // the active DB's build time
	Schema   string    `json:"schema"`   // its schema version, e.g. v6.0.2
	Checksum string    `json:"checksum"` // its archive checksum, e.g. sha256:<hex>
	// Source says where the DB came from: the listing URL it was fetched
	// from, or "import" for an air-gap import.
	Source string `json:"source"`
	// PreviousBuilt is the build time of the DB it replaced; absent for
	// the first DB.
	PreviousBuilt *time.Time `json:"previousBuilt,omitempty"`
	// GrypeVersion is the Grype release the matcher matches with, when it
	// says (added in issue 31; older matchers leave it out).
	GrypeVersion string `json:"grypeVersion,omitempty"`
}

// RematchDone is published by the matcher on crowsnest.rematch.done when it
// has re-matched every stored report against one DB.
type RematchDone struct {
	DBBuilt time.Time `json:"dbBuilt"` // the DB the reports were matched against
	// ReportsTotal = ReportsChanged + ReportsUnchanged + ReportsFailed.
	ReportsTotal int `json:"reportsTotal"`
	// ReportsChanged had different findings: uploaded again (each with its
	// findings.changed event when the finding keys changed).
	ReportsChanged int `json:"reportsChanged"`
	// ReportsUnchanged kept their findings: only their DB record was updated.
	ReportsUnchanged int       `json:"reportsUnchanged"`
	ReportsFailed    int       `json:"reportsFailed"`
	StartedAt        time.Time `json:"startedAt"`
	FinishedAt       time.Time `json:"finishedAt"`
}
