package httpapi

import (
	"net/http"

	"github.com/crowsnest-dev/crowsnest/results-api/api"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/render"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
)

// getStats answers the dashboard's totals, counting the active findings
// of the caller's view (every namespace it may read) and the suppressed
// ones beside them, from a snapshot (statsCache): at most
// Config.StatsMaxAge old, and never older than this replica's last
// report or inventory change or exception set.
func (s *Server) getStats(w http.ResponseWriter, r *http.Request) {
	out, err := s.cachedStats(r.Context(), scopeView(r))
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// statsAnswer is /stats's answer: the totals st less what sup suppresses.
func statsAnswer(st *store.Stats, sup *suppressedCounts) api.Stats {
	t := &sup.total
	out := api.Stats{Images: st.Images, Findings: st.Findings - t.findings, Fixable: st.Fixable - t.fixable,
		KevRunning: st.KEVRunning - t.kevRunning, Overdue: st.Overdue - t.overdue, OverdueKev: st.OverdueKEV - t.overdueKEV,
		Counts: active(render.SeverityCounts(st.Counts), t),
		Suppressed: api.SuppressedStats{Findings: t.findings, Counts: render.SeverityCounts(t.counts), Fixable: t.fixable,
			KevRunning: t.kevRunning, Overdue: t.overdue, OverdueKev: t.overdueKEV},
		Scans: api.ScanCounts{Queued: st.Scans[report.ScanQueued], Scanning: st.Scans[report.ScanScanning],
			Failed: st.Scans[report.ScanFailed], Done: st.Scans[report.ScanDone]},
		TopImages: make([]api.ReportSummary, len(st.TopImages)), TopVulnerabilities: make([]api.TopVulnerability, len(st.TopVulnerabilities))}
	for i, s := range st.TopImages {
		out.TopImages[i] = render.ReportSummary(s)
		activeSummary(&out.TopImages[i], sup.byDigest[s.Digest])
	}
	for i, v := range st.TopVulnerabilities {
		n := sup.suppressedImages(v.ID)
		out.TopVulnerabilities[i] = api.TopVulnerability{Id: v.ID, Severity: api.Severity(v.Severity.String()), Images: v.Images - n, SuppressedImages: n}
	}
	return out
}
