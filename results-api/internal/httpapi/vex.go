package httpapi

import (
	"cmp"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/exception"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/export"
)

var errNoDecisions = newError(http.StatusNotFound, "no_decisions",
	"no exception applies to this image in this view: an OpenVEX document needs at least one statement")

// getVEX serves the OpenVEX document of the decisions that suppress
// findings of the digest in the caller's view: one statement per
// exception and vulnerability id, the image as product and the packages it
// covers there as subcomponents.
func (s *Server) getVEX(w http.ResponseWriter, r *http.Request) {
	digest, err := digestParam(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	v, err := viewOf(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	var o export.VEXOptions
	if p := r.URL.Query().Get("packageProducts"); p != "" {
		if o.PackageProducts, err = strconv.ParseBool(p); err != nil {
			writeError(w, r, badQuery("packageProducts must be true or false"))
			return
		}
	}
	sum, err := s.cfg.Store.GetSummary(r.Context(), digest)
	if err != nil {
		writeError(w, r, err)
		return
	}
	sup, err := s.suppressionOf(r.Context(), v, digest, sum.Findings)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if len(sup.suppressed) == 0 {
		writeError(w, r, errNoDecisions)
		return
	}
	type key struct {
		e    *exception.Exception
		vuln string
	}
	byKey := map[key]*export.Decision{}
	for _, f := range sup.decided {
		e, k := f.by, f.key
		d := byKey[key{e, k.VulnID}]
		if d == nil {
			d = &export.Decision{Vulnerability: k.VulnID, Status: e.Status, Justification: e.Justification, Statement: e.Statement,
				ActionStatement: e.ActionStatement, Owner: e.Owner, Source: e.Ref.String(), ExpiresAt: e.ExpiresAt, Created: e.Created}
			byKey[key{e, k.VulnID}] = d
		}
		if k.PURL != "" {
			d.Packages = append(d.Packages, k.PURL)
		}
	}
	decisions := make([]export.Decision, 0, len(byKey))
	for _, d := range byKey {
		decisions = append(decisions, *d)
	}
	slices.SortFunc(decisions, func(a, b export.Decision) int {
		return cmp.Or(cmp.Compare(a.Vulnerability, b.Vulnerability), cmp.Compare(a.Source, b.Source))
	})
	writeJSON(w, http.StatusOK, export.NewVEX(sum.Image, digest, decisions, time.Now(), o))
}
