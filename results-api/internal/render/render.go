// Package render renders the domain types of package report in the shapes
// of the results API's contract (the types generated into results-api/api
// from openapi.yaml). It is the server's side of that contract: every layer
// that speaks the API — the HTTP handlers and the WebSocket frames — renders
// a report the same way without importing the transport, and the contract
// package imports nothing internal, so any client can import it.
package render

import (
	"encoding/hex"
	"time"

	"github.com/crowsnest-dev/crowsnest/results-api/api"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
)

// SeverityCounts renders per-severity counts.
func SeverityCounts(c report.Counts) api.SeverityCounts {
	return api.SeverityCounts{Critical: c.Critical, High: c.High, Medium: c.Medium, Low: c.Low,
		Negligible: c.Negligible, Unknown: c.Unknown}
}

// ScanStatus renders a scan status (nil for nil).
func ScanStatus(s *report.ScanStatus) *api.ScanStatus {
	if s == nil {
		return nil
	}
	out := &api.ScanStatus{Digest: s.Digest, Image: s.Image, Namespace: s.Namespace, Scanner: s.Scanner,
		Job: s.Job, Status: api.ScanState(s.State), Reason: optString(s.Reason), Message: optString(s.Message),
		Attempt: s.Attempt, UpdatedAt: s.UpdatedAt}
	if s.Redacted {
		out.Redacted = &s.Redacted
	}
	return out
}

// ReportSummary renders a report's summary.
func ReportSummary(s report.Summary) api.ReportSummary {
	out := api.ReportSummary{Digest: s.Digest, Image: s.Image, ScannedAt: s.ScannedAt, StoredAt: s.StoredAt,
		GrypeVersion: s.GrypeVersion, DbBuilt: s.DBBuilt, DbSchema: optString(s.DBSchema),
		MatchedAt: optTime(s.MatchedAt), Cause: cause(s.Cause),
		Counts: SeverityCounts(s.Counts), Fixable: s.Fixable, Findings: s.Findings, Scan: ScanStatus(s.Scan),
		RunningIn: runningIn(s.RunningIn), Kev: s.KEV, MaxRisk: s.MaxRisk}
	if len(s.FindingsFingerprint) > 0 {
		fp := hex.EncodeToString(s.FindingsFingerprint)
		out.FindingsSha256 = &fp
	}
	return out
}

// Risk renders a finding's risk data.
func Risk(r report.Risk) api.Risk {
	return api.Risk{Epss: r.EPSS, Kev: r.KEV, Score: r.Score}
}

// runningIn renders the workloads running a digest (absent when not known).
func runningIn(ws []report.Workload) *[]api.RunningWorkload {
	if ws == nil {
		return nil
	}
	out := make([]api.RunningWorkload, len(ws))
	for i, w := range ws {
		out[i] = api.RunningWorkload{Namespace: w.Namespace, Kind: w.Kind, Name: w.Name, Containers: w.Containers, Pods: w.Pods}
	}
	return &out
}

// ReportDetail renders a report with its findings.
func ReportDetail(r *report.Report) api.ReportDetail {
	s := r.Summary
	d := api.ReportDetail{Digest: s.Digest, Image: s.Image, ScannedAt: s.ScannedAt, StoredAt: s.StoredAt,
		GrypeVersion: s.GrypeVersion, DbBuilt: s.DBBuilt, DbSchema: optString(s.DBSchema),
		MatchedAt: optTime(s.MatchedAt), Cause: cause(s.Cause),
		Counts: SeverityCounts(s.Counts), Fixable: s.Fixable, FindingCount: s.Findings, Scan: ScanStatus(s.Scan),
		RunningIn: runningIn(s.RunningIn), Findings: make([]api.Finding, len(r.FindingList)), Kev: s.KEV, MaxRisk: s.MaxRisk}
	for i, f := range r.FindingList {
		fixed := f.FixedIn
		if fixed == nil {
			fixed = []string{}
		}
		d.Findings[i] = api.Finding{Id: f.ID, Source: f.Source, Severity: api.Severity(f.Severity.String()),
			CvssScore: f.CVSSScore, CvssVector: optString(f.CVSSVector),
			Package: api.Package{Name: f.Package.Name, Version: f.Package.Version, Type: f.Package.Type, Purl: f.Package.PURL},
			FixedIn: fixed, Fixable: f.Fixable(), Description: optString(f.Description), Url: optString(f.URL),
			Risk: Risk(f.Risk)}
	}
	return d
}

// Change renders a recorded change of a digest's findings.
func Change(c *report.Change) api.Change {
	return api.Change{Id: c.ID, Digest: c.Digest, Image: c.Image, Cause: cause(c.Cause), DbBuilt: c.DBBuilt,
		DbSchema: optString(c.DBSchema), ChangedAt: c.ChangedAt, Baseline: c.Baseline,
		NewCounts: SeverityCounts(c.NewCounts), ResolvedCounts: SeverityCounts(c.ResolvedCounts),
		KevAddedCount: c.KEVAddedCount, New: changedFindings(c.New), Resolved: changedFindings(c.Resolved),
		KevAdded: changedFindings(c.KEVAdded), Truncated: c.Truncated}
}

func changedFindings(fs []report.ChangedFinding) []api.ChangedFinding {
	out := make([]api.ChangedFinding, len(fs))
	for i, f := range fs {
		out[i] = api.ChangedFinding{Id: f.ID, Severity: api.Severity(f.Severity.String()),
			Package: api.ChangedPackage{Name: f.Name, Version: f.Version, Type: f.Type}}
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
func cause(c report.Cause) api.Cause {
	if c == "" {
		return api.Scan
	}
	return api.Cause(c)
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
