package httpapi

import (
	"net/http"
	"slices"

	"github.com/crowsnest-dev/crowsnest/results-api/api"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/exception"
)

var errNoExceptions = newError(http.StatusNotFound, "exceptions_off",
	"this results-api does not apply exceptions (--exceptions=false)")

// getExceptionAudit lists the exceptions of the caller's view with their
// audit state: expired, invalid_expiry, lapsed_on_fix, stale (matching no
// finding of the view), expiring (within 7 days) or active. A caller
// limited to namespaces sees the cluster exceptions and those of its
// namespaces, judged against the images running there only.
func (s *Server) getExceptionAudit(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Exceptions == nil {
		writeError(w, r, errNoExceptions)
		return
	}
	v, err := viewOf(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	var want exception.AuditState
	if st := r.URL.Query().Get("state"); st != "" {
		if want = exception.AuditState(st); !slices.Contains(exception.AuditStates, want) {
			writeError(w, r, badQuery("state must be one of expired, invalid_expiry, lapsed_on_fix, stale, expiring, active"))
			return
		}
	}
	set := s.exceptions()
	located, err := set.Gather(r.Context(), s.cfg.Store, v.all, v.namespaces)
	if err != nil {
		writeError(w, r, err)
		return
	}
	out := api.ExceptionAudit{Items: []api.AuditedException{}, Counts: map[string]int{}}
	for _, st := range exception.AuditStates {
		out.Counts[string(st)] = 0
	}
	for _, a := range set.Audit(located) {
		if !a.Cluster() && !v.all && !slices.Contains(v.namespaces, a.Namespace) {
			continue
		}
		out.Counts[string(a.State)]++
		if want != "" && a.State != want {
			continue
		}
		ref := api.ExceptionRef{Kind: api.ExceptionRefKind(a.Kind), Name: a.Name}
		if a.Namespace != "" {
			ref.Namespace = &a.Namespace
		}
		out.Items = append(out.Items, api.AuditedException{Exception: ref, State: api.AuditState(a.State), Status: api.VEXStatus(a.Status),
			Vulnerabilities: a.Vulnerabilities, ExpiresAt: a.ExpiresAt, CreatedAt: a.Created, ExpiredOnFix: a.ExpiredOnFix,
			Owner: optString(a.Owner), Ticket: optString(a.Ticket), Covered: a.Covered, Applied: a.Applied})
	}
	out.Documents = auditDocuments(set, v)
	writeJSON(w, http.StatusOK, out)
}

// auditDocuments lists the imported OpenVEX documents of view v: cluster
// ones and those of its namespaces.
func auditDocuments(set *exception.Set, v view) []api.AuditedVEXDocument {
	out := []api.AuditedVEXDocument{}
	for _, d := range set.Documents() {
		if d.Namespace != "" && !v.all && !slices.Contains(v.namespaces, d.Namespace) {
			continue
		}
		a := api.AuditedVEXDocument{Document: newRef(d.Ref), State: api.DocumentValid, Statements: d.Statements, Vex: newProvenance(d.Provenance)}
		if !d.Valid() {
			a.State, a.Error = api.DocumentInvalid, optString(d.Err.Error())
		}
		out = append(out, a)
	}
	return out
}
