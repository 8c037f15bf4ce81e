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

	"github.com/crowsnest-dev/crowsnest/api/scan"
	"github.com/crowsnest-dev/crowsnest/results-api/api"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/authz"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
)

// vulnDBBodyLimit caps the body of PUT …/{digest}/vulndb: two short
// strings. vulnDBsBodyLimit caps PUT /reports/vulndb: those and
// store.MaxVulnDBBatch digests of 71 bytes plus JSON.
const (
	vulnDBBodyLimit  = 1 << 10
	vulnDBsBodyLimit = 96 << 10
)

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
	var body vulnDBBody
	rec, err := decodeVulnDB(r, &body, &body)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if err := s.cfg.Store.RecordVulnDB(r.Context(), digest, rec); err != nil {
		writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// putVulnDBs is putVulnDB for up to store.MaxVulnDBBatch digests in one
// request and one statement: the matcher records a page of unchanged
// re-matches at once. Digests without a report are listed as missing (the
// matcher counts them deleted), not refused.
func (s *Server) putVulnDBs(w http.ResponseWriter, r *http.Request) {
	var body struct {
		vulnDBBody
		Digests []string `json:"digests"`
	}
	rec, err := decodeVulnDB(r, &body, &body.vulnDBBody)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if n := len(body.Digests); n == 0 || n > store.MaxVulnDBBatch {
		writeError(w, r, invalidVulnDB("digests must list 1 to "+strconv.Itoa(store.MaxVulnDBBatch)+" digests"))
		return
	}
	for _, d := range body.Digests {
		if _, err := report.ParseDigest(d); err != nil {
			writeError(w, r, newError(http.StatusBadRequest, "invalid_digest", err.Error()))
			return
		}
	}
	missing, err := s.cfg.Store.RecordVulnDBs(r.Context(), body.Digests, rec)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if missing == nil {
		missing = []string{}
	}
	writeJSON(w, http.StatusOK, api.VulnDBBatchResult{Recorded: len(body.Digests) - len(missing), Missing: missing})
}

// vulnDBBody is the body of PUT …/vulndb. The fields are strings (not
// api.VulnDBRecord's time.Time): each gets its own message.
type vulnDBBody struct {
	Built  string `json:"built"`
	Schema string `json:"schema"`
}

// decodeVulnDB checks the scope (rematch or admin), reads one JSON object
// into body and checks the DB it names, f (body itself or a part of it).
func decodeVulnDB(r *http.Request, body any, f *vulnDBBody) (store.VulnDBRecord, error) {
	if scope := scopeOf(r); scope != authz.Rematch && scope != authz.Admin {
		return store.VulnDBRecord{}, newError(http.StatusForbidden, "forbidden", "only the rematch and admin scopes may record a report's DB")
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(body); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return store.VulnDBRecord{}, err
		}
		return store.VulnDBRecord{}, invalidVulnDB("body must be {\"built\": \"<RFC 3339>\", \"schema\": \"v6.x.y\"}: " + jsonProblem(err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return store.VulnDBRecord{}, invalidVulnDB("body must hold one JSON object")
	}
	built, err := time.Parse(time.RFC3339, f.Built)
	if err != nil {
		return store.VulnDBRecord{}, invalidVulnDB("built must be an RFC 3339 time, e.g. 2026-11-01T00:00:00Z")
	}
	if !dbSchemaPattern.MatchString(f.Schema) {
		return store.VulnDBRecord{}, invalidVulnDB("schema must be a Grype DB schema version such as v6.0.2")
	}
	return store.VulnDBRecord{Built: built.UTC().Format(time.RFC3339Nano), Schema: f.Schema, MatchedAt: time.Now().UTC()}, nil
}

// uploadedDB reads the DB a report upload names in its headers
// (scan.HeaderDBBuilt and scan.HeaderDBSchema, sent by the scan Job's
// uploader from Grype's own JSON report). Both or neither: a report
// without them is stored with an unknown DB, one with a bad value is
// refused with 400 invalid_vulndb before its body is read.
func uploadedDB(r *http.Request) (store.VulnDBRecord, error) {
	built, schema := r.Header.Get(scan.HeaderDBBuilt), r.Header.Get(scan.HeaderDBSchema)
	if built == "" && schema == "" {
		return store.VulnDBRecord{}, nil
	}
	if built == "" || schema == "" {
		return store.VulnDBRecord{}, invalidVulnDB(scan.HeaderDBBuilt + " and " + scan.HeaderDBSchema + " go together: send both or neither")
	}
	t, err := time.Parse(time.RFC3339, built)
	if err != nil {
		return store.VulnDBRecord{}, invalidVulnDB(scan.HeaderDBBuilt + " must be an RFC 3339 time, e.g. 2026-11-01T00:00:00Z")
	}
	if !dbSchemaPattern.MatchString(schema) {
		return store.VulnDBRecord{}, invalidVulnDB(scan.HeaderDBSchema + " must be a Grype DB schema version such as v6.1.10")
	}
	return store.VulnDBRecord{Built: t.UTC().Format(time.RFC3339Nano), Schema: schema}, nil
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
