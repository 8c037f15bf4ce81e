package httpapi

import (
	"net/http"

	"github.com/crowsnest-dev/crowsnest/results-api/api"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/render"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
)

// listWorkloads serves the inventory's workloads with their images and
// severity totals (within the reader's scope: the store filters).
func (s *Server) listWorkloads(w http.ResponseWriter, r *http.Request) {
	q := store.WorkloadQuery{Namespace: r.URL.Query().Get("namespace")}
	var err error
	if q.Limit, err = intParam(r, "limit", 200, 1000); err != nil {
		writeError(w, r, err)
		return
	}
	if len(q.Namespace) > 63 {
		writeError(w, r, badQuery("namespace is longer than 63 characters"))
		return
	}
	if v := r.URL.Query().Get("minSeverity"); v != "" {
		sev, ok := report.ParseSeverity(v)
		if !ok || v == "unknown" || v == "none" {
			writeError(w, r, badQuery("minSeverity must be critical, high, medium, low or negligible"))
			return
		}
		q.MinSeverity = sev
	}
	ws, more, err := s.cfg.Store.ListWorkloads(r.Context(), q)
	if err != nil {
		writeError(w, r, err)
		return
	}
	out := api.WorkloadList{Items: make([]api.WorkloadSummary, len(ws)), Truncated: more}
	for i, wl := range ws {
		var total report.Counts
		fixable := 0
		sum := api.WorkloadSummary{Namespace: wl.Namespace, Kind: wl.Kind, Name: wl.Name, Images: make([]api.WorkloadImage, len(wl.Images))}
		for j, img := range wl.Images {
			ai := api.WorkloadImage{Digest: img.Digest, Image: img.Image, Containers: img.Containers, Pods: img.Pods, Scanned: img.Scanned}
			if img.Scanned {
				c, f := render.SeverityCounts(img.Counts), img.Fixable
				ai.Counts, ai.Fixable = &c, &f
				total.Critical += img.Counts.Critical
				total.High += img.Counts.High
				total.Medium += img.Counts.Medium
				total.Low += img.Counts.Low
				total.Negligible += img.Counts.Negligible
				total.Unknown += img.Counts.Unknown
				fixable += img.Fixable
			}
			sum.Images[j] = ai
		}
		sum.Counts, sum.Fixable = render.SeverityCounts(total), fixable
		out.Items[i] = sum
	}
	writeJSON(w, http.StatusOK, out)
}
