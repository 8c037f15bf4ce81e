package httpapi

import (
	"net/http"
	"time"

	"github.com/crowsnest-dev/crowsnest/results-api/api"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/render"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
)

// Pages of changes. Each change lists at most changeFindingsLimit of its
// new and of its resolved findings (truncated says when there are more),
// which bounds a page at 100 × 2 × 200 findings.
const (
	defaultChangePage   = 20
	maxChangePage       = 100
	changeFindingsLimit = 200
)

// listDigestChanges serves one digest's change history, newest first.
func (s *Server) listDigestChanges(w http.ResponseWriter, r *http.Request) {
	digest, err := digestParam(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	q, err := changeQuery(r, false)
	if err != nil {
		writeError(w, r, err)
		return
	}
	q.Digest = digest
	s.serveChanges(w, r, q)
}

// listChanges serves the fleet-wide feed of changes, newest first.
func (s *Server) listChanges(w http.ResponseWriter, r *http.Request) {
	q, err := changeQuery(r, true)
	if err != nil {
		writeError(w, r, err)
		return
	}
	s.serveChanges(w, r, q)
}

func (s *Server) serveChanges(w http.ResponseWriter, r *http.Request, q store.ChangeQuery) {
	page, err := s.cfg.Store.ListChanges(r.Context(), q)
	if err != nil {
		writeError(w, r, err)
		return
	}
	out := api.ChangeList{Items: make([]api.Change, len(page.Items)), NextCursor: optString(page.NextCursor)}
	for i := range page.Items {
		out.Items[i] = render.Change(&page.Items[i])
	}
	writeJSON(w, http.StatusOK, out)
}

// changeQuery reads limit and cursor, and for the fleet feed its filters.
func changeQuery(r *http.Request, filters bool) (store.ChangeQuery, error) {
	v := r.URL.Query()
	q := store.ChangeQuery{Cursor: v.Get("cursor"), FindingsLimit: changeFindingsLimit}
	var err error
	if q.Limit, err = intParam(r, "limit", defaultChangePage, maxChangePage); err != nil {
		return q, err
	}
	if len(q.Cursor) > 200 {
		return q, badQuery("cursor is not a cursor from this API")
	}
	if !filters {
		return q, nil
	}
	if since := v.Get("since"); since != "" {
		if q.Since, err = time.Parse(time.RFC3339, since); err != nil {
			return q, badQuery("since must be an RFC 3339 time, e.g. 2026-11-01T00:00:00Z")
		}
	}
	if ms := v.Get("minSeverity"); ms != "" {
		sev, ok := report.ParseSeverity(ms)
		if !ok || !validSeverityName(ms) {
			return q, badQuery("minSeverity must be critical, high, medium, low, negligible or unknown")
		}
		q.MinSeverity = &sev
	}
	if c := v.Get("cause"); c != "" {
		cause, ok := report.ParseCause(c)
		if !ok {
			return q, badQuery("cause must be scan, rescan or rematch")
		}
		q.Cause = cause
	}
	return q, nil
}

func validSeverityName(s string) bool {
	switch s {
	case "critical", "high", "medium", "low", "negligible", "unknown":
		return true
	}
	return false
}
