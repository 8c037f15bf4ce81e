package httpapi

import (
	"net/http"

	"github.com/crowsnest-dev/crowsnest/results-api/api"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/render"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
)

func (s *Server) listScans(w http.ResponseWriter, r *http.Request) {
	limit, err := intParam(r, "limit", 200, 1000)
	if err != nil {
		writeError(w, r, err)
		return
	}
	state := report.ScanState(r.URL.Query().Get("status"))
	switch state {
	case "", report.ScanQueued, report.ScanScanning, report.ScanFailed, report.ScanDone:
	default:
		writeError(w, r, badQuery("status must be queued, scanning, failed or done"))
		return
	}
	scans, err := s.cfg.Store.ListScans(r.Context(), state, limit)
	if err != nil {
		writeError(w, r, err)
		return
	}
	out := api.ScanList{Items: make([]api.ScanStatus, len(scans))}
	for i := range scans {
		out.Items[i] = *render.ScanStatus(&scans[i])
	}
	writeJSON(w, http.StatusOK, out)
}
