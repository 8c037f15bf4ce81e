package httpapi

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/crowsnest-dev/crowsnest/results-api/api"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/authz"
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
		out.Items[i] = api.NewChange(&page.Items[i])
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

// vulnDBBodyLimit caps the body of PUT …/vulndb: two short strings.
const vulnDBBodyLimit = 1 << 10

// dbSchemaPattern is a Grype DB schema version: v6, v6.0 or v6.0.2.
var dbSchemaPattern = regexp.MustCompile(`^v[0-9]{1,3}(\.[0-9]{1,6}){0,2}$`)

// putVulnDB records that a digest's report was matched again against a DB
// and its findings did not change: the matcher's cheap alternative to
// uploading an identical report. It updates the report's DB build, schema
// and match time only: no findings, no BOM, no event.
func (s *Server) putVulnDB(w http.ResponseWriter, r *http.Request) {
	digest, err := digestParam(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if scope := scopeOf(r); scope != authz.Rematch && scope != authz.Admin {
		writeError(w, r, newError(http.StatusForbidden, "forbidden", "only the rematch and admin scopes may record a report's DB"))
		return
	}
	// The fields as strings (not api.VulnDBRecord's time.Time): each gets
	// its own message.
	var body struct {
		Built  string `json:"built"`
		Schema string `json:"schema"`
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeError(w, r, err)
			return
		}
		writeError(w, r, invalidVulnDB("body must be {\"built\": \"<RFC 3339>\", \"schema\": \"v6.x.y\"}: "+jsonProblem(err)))
		return
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		writeError(w, r, invalidVulnDB("body must hold one JSON object"))
		return
	}
	built, err := time.Parse(time.RFC3339, body.Built)
	if err != nil {
		writeError(w, r, invalidVulnDB("built must be an RFC 3339 time, e.g. 2026-11-01T00:00:00Z"))
		return
	}
	if !dbSchemaPattern.MatchString(body.Schema) {
		writeError(w, r, invalidVulnDB("schema must be a Grype DB schema version such as v6.0.2"))
		return
	}
	rec := store.VulnDBRecord{Built: built.UTC().Format(time.RFC3339Nano), Schema: body.Schema, MatchedAt: time.Now().UTC()}
	if err := s.cfg.Store.RecordVulnDB(r.Context(), digest, rec); err != nil {
		writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func invalidVulnDB(msg string) error { return newError(http.StatusBadRequest, "invalid_vulndb", msg) }

// jsonProblem describes a JSON decoding error without echoing the body.
func jsonProblem(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.EOF):
		return "empty body"
	case errors.As(err, &se):
		return "not JSON (offset " + strconv.FormatInt(se.Offset, 10) + ")"
	case errors.As(err, &te):
		return te.Field + " must be a string"
	case strings.HasPrefix(err.Error(), "json: unknown field"):
		return strings.TrimPrefix(err.Error(), "json: ")
	}
	return "not JSON"
}
