package httpapi

import (
	"github.com/crowsnest-dev/crowsnest/results-api/api"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
)

func apiCounts(c report.Counts) api.SeverityCounts {
	return api.SeverityCounts{Critical: c.Critical, High: c.High, Medium: c.Medium, Low: c.Low,
		Negligible: c.Negligible, Unknown: c.Unknown}
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// APIScan renders a scan status as the API (and WebSocket) shape.
func APIScan(s *report.ScanStatus) *api.ScanStatus {
	if s == nil {
		return nil
	}
	return &api.ScanStatus{Digest: s.Digest, Image: s.Image, Namespace: s.Namespace, Scanner: s.Scanner,
		Job: s.Job, Status: api.ScanState(s.State), Reason: optString(s.Reason), Message: optString(s.Message),
		Attempt: s.Attempt, UpdatedAt: s.UpdatedAt}
}

func apiSummary(s report.Summary) api.ReportSummary {
	return api.ReportSummary{Digest: s.Digest, Image: s.Image, ScannedAt: s.ScannedAt, StoredAt: s.StoredAt,
		GrypeVersion: s.GrypeVersion, DbBuilt: s.DBBuilt, DbSchema: optString(s.DBSchema),
		Counts: apiCounts(s.Counts), Fixable: s.Fixable, Findings: s.Findings, Scan: APIScan(s.Scan)}
}

func apiDetail(r *report.Report) api.ReportDetail {
	s := r.Summary
	d := api.ReportDetail{Digest: s.Digest, Image: s.Image, ScannedAt: s.ScannedAt, StoredAt: s.StoredAt,
		GrypeVersion: s.GrypeVersion, DbBuilt: s.DBBuilt, DbSchema: optString(s.DBSchema),
		Counts: apiCounts(s.Counts), Fixable: s.Fixable, FindingCount: s.Findings, Scan: APIScan(s.Scan),
		Findings: make([]api.Finding, len(r.FindingList))}
	for i, f := range r.FindingList {
		fixed := f.FixedIn
		if fixed == nil {
			fixed = []string{}
		}
		d.Findings[i] = api.Finding{Id: f.ID, Source: f.Source, Severity: api.Severity(f.Severity.String()),
			CvssScore: f.CVSSScore, CvssVector: optString(f.CVSSVector),
			Package: api.Package{Name: f.Package.Name, Version: f.Package.Version, Type: f.Package.Type, Purl: f.Package.PURL},
			FixedIn: fixed, Fixable: f.Fixable(), Description: optString(f.Description), Url: optString(f.URL)}
	}
	return d
}
