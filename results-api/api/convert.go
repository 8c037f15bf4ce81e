package api

import (
	"encoding/hex"
	"time"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
)

// The conversions below render domain types (package report) in the API's
// shape. They live beside the generated types so that every layer that
// speaks the API — the HTTP handlers and the WebSocket frames — renders a
// report the same way without importing the transport.

// NewSeverityCounts renders per-severity counts.
func NewSeverityCounts(c report.Counts) SeverityCounts {
	return SeverityCounts{Critical: c.Critical, High: c.High, Medium: c.Medium, Low: c.Low,
		Negligible: c.Negligible, Unknown: c.Unknown}
}

// NewScanStatus renders a scan status (nil for nil).
func NewScanStatus(s *report.ScanStatus) *ScanStatus {
	if s == nil {
		return nil
	}
	out := &ScanStatus{Digest: s.Digest, Image: s.Image, Namespace: s.Namespace, Scanner: s.Scanner,
		Job: s.Job, Status: ScanState(s.State), Reason: optString(s.Reason), Message: optString(s.Message),
		Attempt: s.Attempt, UpdatedAt: s.UpdatedAt}
	if s.Redacted {
		out.Redacted = &s.Redacted
	}
	return out
}

// NewReportSummary renders a report's summary.
func NewReportSummary(s report.Summary) ReportSummary {
	out := ReportSummary{Digest: s.Digest, Image: s.Image, ScannedAt: s.ScannedAt, StoredAt: s.StoredAt,
		GrypeVersion: s.GrypeVersion, DbBuilt: s.DBBuilt, DbSchema: optString(s.DBSchema),
		MatchedAt: optTime(s.MatchedAt), Cause: cause(s.Cause),
		Counts: NewSeverityCounts(s.Counts), Fixable: s.Fixable, Findings: s.Findings, Scan: NewScanStatus(s.Scan),
		RunningIn: runningIn(s.RunningIn), Kev: s.KEV, MaxRisk: s.MaxRisk}
	if len(s.FindingsFingerprint) > 0 {
		fp := hex.EncodeToString(s.FindingsFingerprint)
		out.FindingsSha256 = &fp
	}
	return out
}

// NewRisk renders a finding's risk data.
func NewRisk(r report.Risk) Risk {
	return Risk{Epss: r.EPSS, Kev: r.KEV, Score: r.Score}
}

// runningIn renders the workloads running a digest (absent when not known).
func runningIn(ws []report.Workload) *[]RunningWorkload {
	if ws == nil {
		return nil
	}
	out := make([]RunningWorkload, len(ws))
	for i, w := range ws {
		out[i] = RunningWorkload{Namespace: w.Namespace, Kind: w.Kind, Name: w.Name, Containers: w.Containers, Pods: w.Pods}
	}
	return &out
}

// NewReportDetail renders a report with its findings.
func NewReportDetail(r *report.Report) ReportDetail {
	s := r.Summary
	d := ReportDetail{Digest: s.Digest, Image: s.Image, ScannedAt: s.ScannedAt, StoredAt: s.StoredAt,
		GrypeVersion: s.GrypeVersion, DbBuilt: s.DBBuilt, DbSchema: optString(s.DBSchema),
		MatchedAt: optTime(s.MatchedAt), Cause: cause(s.Cause),
		Counts: NewSeverityCounts(s.Counts), Fixable: s.Fixable, FindingCount: s.Findings, Scan: NewScanStatus(s.Scan),
		RunningIn: runningIn(s.RunningIn), Findings: make([]Finding, len(r.FindingList)), Kev: s.KEV, MaxRisk: s.MaxRisk}
	for i, f := range r.FindingList {
		fixed := f.FixedIn
		if fixed == nil {
			fixed = []string{}
		}
		d.Findings[i] = Finding{Id: f.ID, Source: f.Source, Severity: Severity(f.Severity.String()),
			CvssScore: f.CVSSScore, CvssVector: optString(f.CVSSVector),
			Package: Package{Name: f.Package.Name, Version: f.Package.Version, Type: f.Package.Type, Purl: f.Package.PURL},
			FixedIn: fixed, Fixable: f.Fixable(), Description: optString(f.Description), Url: optString(f.URL),
			Risk: NewRisk(f.Risk)}
	}
	return d
}

// NewChange renders a recorded change of a digest's findings.
func NewChange(c *report.Change) Change {
	return Change{Id: c.ID, Digest: c.Digest, Image: c.Image, Cause: cause(c.Cause), DbBuilt: c.DBBuilt,
		DbSchema: optString(c.DBSchema), ChangedAt: c.ChangedAt, Baseline: c.Baseline,
		NewCounts: NewSeverityCounts(c.NewCounts), ResolvedCounts: NewSeverityCounts(c.ResolvedCounts),
		KevAddedCount: c.KEVAddedCount, New: newChangedFindings(c.New), Resolved: newChangedFindings(c.Resolved),
		KevAdded: newChangedFindings(c.KEVAdded), Truncated: c.Truncated}
}

func newChangedFindings(fs []report.ChangedFinding) []ChangedFinding {
	out := make([]ChangedFinding, len(fs))
	for i, f := range fs {
		out[i] = ChangedFinding{Id: f.ID, Severity: Severity(f.Severity.String()),
			Package: ChangedPackage{Name: f.Name, Version: f.Version, Type: f.Type}}
		if len(f.FixedIn) > 0 {
			fixed := f.FixedIn
			out[i].FixedIn = &fixed
		}
		if f.Risk.KEV {
			out[i].Kev = &f.Risk.KEV
		}
		if f.Risk.Rated() {
			score := f.Risk.Score
			out[i].Epss, out[i].Risk = f.Risk.EPSS, &score
		}
	}
	return out
}

// cause renders a report's cause; reports stored before causes were
// recorded were scans.
func cause(c report.Cause) Cause {
	if c == "" {
		return Scan
	}
	return Cause(c)
}

func optTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// optString renders an empty string as an absent optional field.
func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
