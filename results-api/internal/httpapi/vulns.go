package httpapi

import (
	"context"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/crowsnest-dev/crowsnest/results-api/api"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/exception"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/render"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
)

func (s *Server) getVulnerability(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	if id == "" || len(id) > 200 {
		writeError(w, r, badQuery("vulnerability id must be 1 to 200 characters"))
		return
	}
	mode, err := suppressedParam(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	view, err := viewOf(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	age, err := s.ageQuery(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	v, err := s.cfg.Store.GetVulnerability(r.Context(), id, age)
	if err != nil {
		writeError(w, r, err)
		return
	}
	marks, notes, err := s.suppressImages(r.Context(), view, v.ID, v.Images)
	if err != nil {
		writeError(w, r, err)
		return
	}
	out := api.Vulnerability{Id: v.ID, Severity: api.Severity(v.Severity.String()), Risk: render.Risk(v.Risk),
		Description: optString(v.Description), Url: optString(v.URL), Images: make([]api.AffectedImage, 0, len(v.Images))}
	for i, a := range v.Images {
		if marks[i] != nil {
			out.SuppressedImages++
		} else {
			out.ActiveImages++
		}
		if !mode.keeps(marks[i] != nil) {
			continue
		}
		ai := api.AffectedImage{Digest: a.Digest, Image: a.Image, Package: a.Package, Version: a.Version,
			FixedIn: a.FixedIn, Risk: render.Risk(a.Risk), Suppression: newSuppression(marks[i]), VexStatement: newAnnotation(notes[i])}
		ai.FirstSeen, ai.AgeDays, ai.SlaDue, ai.Overdue = lifecycleFields(report.Finding{Severity: a.Severity, Risk: a.Risk, Seen: a.Seen}, s.cfg.SLA, age.Now)
		out.Images = append(out.Images, ai)
	}
	writeJSON(w, http.StatusOK, out)
}

// suppressImages decides each affected image's finding in view v: the
// decision that suppresses it, else the imported statement that annotates
// it. One inventory query for all their digests, none without exceptions.
func (s *Server) suppressImages(ctx context.Context, v view, vulnID string, images []store.Affected) (marks, notes []*exception.Exception, err error) {
	marks, notes = make([]*exception.Exception, len(images)), make([]*exception.Exception, len(images))
	set := s.exceptions()
	if set.Len() == 0 || len(images) == 0 {
		return marks, notes, nil
	}
	digests := make([]string, len(images))
	for i, a := range images {
		digests[i] = a.Digest
	}
	running, err := s.cfg.Store.NamespacesOfDigests(ctx, digests)
	if err != nil {
		return nil, nil, err
	}
	for i, a := range images {
		f, runsIn := exception.Finding{Digest: a.Digest, VulnID: vulnID, PURL: a.PURL, FixedIn: a.FixedIn}, v.runsIn(running[a.Digest])
		if marks[i] = set.Decide(f, runsIn); marks[i] == nil {
			notes[i] = set.Annotate(f, runsIn)
		}
	}
	return marks, notes, nil
}
