package httpapi

import (
	"net/http"

	"github.com/crowsnest-dev/crowsnest/results-api/api"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/render"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
)

func (s *Server) getStats(w http.ResponseWriter, r *http.Request) {
	st, err := s.cfg.Store.Stats(r.Context(), s.now(), s.cfg.SLA)
	if err != nil {
		writeError(w, r, err)
		return
	}
	out := api.Stats{Images: st.Images, Findings: st.Findings, Fixable: st.Fixable, KevRunning: st.KEVRunning, Overdue: st.Overdue, OverdueKev: st.OverdueKEV, Counts: render.SeverityCounts(st.Counts),
		Scans: api.ScanCounts{Queued: st.Scans[report.ScanQueued], Scanning: st.Scans[report.ScanScanning],
			Failed: st.Scans[report.ScanFailed], Done: st.Scans[report.ScanDone]},
		TopImages: make([]api.ReportSummary, len(st.TopImages)), TopVulnerabilities: make([]api.TopVulnerability, len(st.TopVulnerabilities))}
	for i, s := range st.TopImages {
		out.TopImages[i] = render.ReportSummary(s)
	}
	for i, v := range st.TopVulnerabilities {
		out.TopVulnerabilities[i] = api.TopVulnerability{Id: v.ID, Severity: api.Severity(v.Severity.String()), Images: v.Images}
	}
	writeJSON(w, http.StatusOK, out)
}
