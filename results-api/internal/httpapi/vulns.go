package httpapi

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/crowsnest-dev/crowsnest/results-api/api"
)

func (s *Server) getVulnerability(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	if id == "" || len(id) > 200 {
		writeError(w, r, badQuery("vulnerability id must be 1 to 200 characters"))
		return
	}
	v, err := s.cfg.Store.GetVulnerability(r.Context(), id)
	if err != nil {
		writeError(w, r, err)
		return
	}
	out := api.Vulnerability{Id: v.ID, Severity: api.Severity(v.Severity.String()), Risk: api.NewRisk(v.Risk),
		Description: optString(v.Description), Url: optString(v.URL), Images: make([]api.AffectedImage, len(v.Images))}
	for i, a := range v.Images {
		out.Images[i] = api.AffectedImage{Digest: a.Digest, Image: a.Image, Package: a.Package, Version: a.Version, FixedIn: a.FixedIn,
			Risk: api.NewRisk(a.Risk)}
	}
	writeJSON(w, http.StatusOK, out)
}
