package v1

import "time"

// NeedReason says why a digest is queued for a scan.
type NeedReason string

const (
	NeedNew    NeedReason = "new"    // no report exists
	NeedRescan NeedReason = "rescan" // the report is older than rescanInterval
	NeedRetry  NeedReason = "retry"  // an earlier scan failed
)

// ImageNeeded is published by the operator on crowsnest.image.needed after
// the scan Job for a digest exists.
type ImageNeeded struct {
	Digest    string     `json:"digest"`    // sha256:<64 hex>
	Image     string     `json:"image"`     // repository@sha256:<64 hex>
	Namespace string     `json:"namespace"` // namespace of the Scanner and its Job
	Scanner   string     `json:"scanner"`
	Job       string     `json:"job"`
	Pods      []string   `json:"pods"` // names of Pods running the digest (bounded)
	Reason    NeedReason `json:"reason"`
	Attempt   int        `json:"attempt"` // 1 for the first scan of this need
}

// Outcome of a scan Job.
type Outcome string

const (
	OutcomeSucceeded Outcome = "succeeded"
	OutcomeFailed    Outcome = "failed"
)

// JobDone is published by the operator on crowsnest.job.done once a scan
// Job's outcome is recorded.
type JobDone struct {
	Digest          string  `json:"digest"`
	Image           string  `json:"image"`
	Namespace       string  `json:"namespace"`
	Scanner         string  `json:"scanner"`
	Job             string  `json:"job"`
	Outcome         Outcome `json:"outcome"`
	Reason          string  `json:"reason,omitempty"`  // machine-readable failure reason, e.g. ImagePullFailed
	Message         string  `json:"message,omitempty"` // human-readable detail
	DurationSeconds float64 `json:"durationSeconds"`
	Attempt         int     `json:"attempt"`
}

// SeverityCounts counts findings per severity. Grype's "Negligible" is
// CycloneDX "none" and is counted as negligible.
type SeverityCounts struct {
	Critical   int `json:"critical"`
	High       int `json:"high"`
	Medium     int `json:"medium"`
	Low        int `json:"low"`
	Negligible int `json:"negligible"`
	Unknown    int `json:"unknown"`
}

// ReportStored is published by results-api on crowsnest.report.stored after a
// report is committed.
type ReportStored struct {
	Digest    string         `json:"digest"`
	Image     string         `json:"image"`
	ScannedAt time.Time      `json:"scannedAt"`
	Counts    SeverityCounts `json:"counts"`
	Fixable   int            `json:"fixable"`
	Findings  int            `json:"findings"`
}

// ReportDeleted is published by results-api on crowsnest.report.deleted.
type ReportDeleted struct {
	Digest string `json:"digest"`
	Image  string `json:"image"`
}
