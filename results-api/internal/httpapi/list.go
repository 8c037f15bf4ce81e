package httpapi

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/crowsnest-dev/crowsnest/results-api/api"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/render"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
)

const (
	defaultPage = 50
	maxPage     = 500
)

func badQuery(msg string) error { return newError(http.StatusBadRequest, "invalid_query", msg) }

// optString renders an empty string as an absent optional field.
func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// intParam parses an optional integer query parameter within [1, max].
func intParam(r *http.Request, name string, def, max int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > max {
		return 0, badQuery(name + " must be an integer from 1 to " + strconv.Itoa(max))
	}
	return n, nil
}

func (s *Server) listReports(w http.ResponseWriter, r *http.Request) {
	lq, err := listQuery(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	q := r.URL.Query()
	lq.Cursor, lq.Sort = q.Get("cursor"), q.Get("sort")
	if lq.Sort == "" {
		lq.Sort = "-risk"
	}
	if lq.Limit, err = intParam(r, "limit", defaultPage, maxPage); err != nil {
		writeError(w, r, err)
		return
	}
	if lq.Sort != "" && !store.ValidSort(lq.Sort) {
		writeError(w, r, badQuery("sort must be one of critical, high, medium, low, scannedAt, image, risk, kev, optionally prefixed with -"))
		return
	}
	v, err := viewOf(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	page, err := s.cfg.Store.ListReports(r.Context(), lq)
	if err != nil {
		writeError(w, r, err)
		return
	}
	digests := make([]string, len(page.Items))
	for i, it := range page.Items {
		digests[i] = it.Digest
	}
	// Per page: the filters and the sort read the stored counts of all
	// findings, the counts shown are the view's.
	sup, err := s.suppressedIn(r.Context(), v, digests)
	if err != nil {
		writeError(w, r, err)
		return
	}
	out := api.ReportList{Items: make([]api.ReportSummary, len(page.Items)), Total: int(page.Total),
		NextCursor: optString(page.NextCursor)}
	for i, it := range page.Items {
		out.Items[i] = render.ReportSummary(it)
		activeSummary(&out.Items[i], sup.byDigest[it.Digest])
	}
	writeJSON(w, http.StatusOK, out)
}

// listQuery reads the filters of a report list: minSeverity, fixable, q
// and the inventory filters (the fleet findings export takes the same).
func listQuery(r *http.Request) (store.ListQuery, error) {
	q := r.URL.Query()
	lq := store.ListQuery{Text: q.Get("q")}
	if v := q.Get("minSeverity"); v != "" {
		sev, ok := report.ParseSeverity(v)
		if !ok || v == "unknown" || v == "none" {
			return lq, badQuery("minSeverity must be critical, high, medium, low or negligible")
		}
		lq.MinSeverity = sev
	}
	if v := q.Get("fixable"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return lq, badQuery("fixable must be true or false")
		}
		lq.FixableOnly = b
	}
	if len(lq.Text) > 200 {
		return lq, badQuery("q is longer than 200 characters")
	}
	var err error
	if lq.Risk, err = riskQuery(r); err != nil {
		return lq, err
	}
	return lq, inventoryFilters(r, &lq)
}

// inventoryFilters reads the namespace, workload (kind/name) and running
// (true, false, all) filters of a report list.
func inventoryFilters(r *http.Request, lq *store.ListQuery) error {
	q := r.URL.Query()
	lq.Namespace = q.Get("namespace")
	if len(lq.Namespace) > 63 {
		return badQuery("namespace is longer than 63 characters")
	}
	if v := q.Get("workload"); v != "" {
		kind, name, ok := strings.Cut(v, "/")
		if !ok || kind == "" || name == "" || len(v) > 317 {
			return badQuery("workload must be kind/name, e.g. Deployment/web")
		}
		lq.WorkloadKind, lq.WorkloadName = kind, name
	}
	switch v := q.Get("running"); v {
	case "", "all":
	case "true", "false":
		b := v == "true"
		lq.Running = &b
	default:
		return badQuery("running must be true, false or all")
	}
	return nil
}
