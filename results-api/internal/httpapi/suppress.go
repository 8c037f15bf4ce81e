package httpapi

import (
	"context"
	"net/http"
	"slices"

	"github.com/crowsnest-dev/crowsnest/results-api/api"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/exception"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
)

// ExceptionSource hands out the current triage decisions
// (exception.Watcher).
type ExceptionSource interface {
	Set() *exception.Set
}

// suppressedMode is the suppressed query parameter.
type suppressedMode string

const (
	activeOnly     suppressedMode = "false"
	suppressedOnly suppressedMode = "true"
	bothModes      suppressedMode = "all"
)

func suppressedParam(r *http.Request) (suppressedMode, error) {
	switch m := suppressedMode(r.URL.Query().Get("suppressed")); m {
	case "":
		return activeOnly, nil
	case activeOnly, suppressedOnly, bothModes:
		return m, nil
	}
	return "", badQuery("suppressed must be false, true or all")
}

// keeps reports whether a finding, suppressed or not, is shown in mode m.
func (m suppressedMode) keeps(suppressed bool) bool {
	return m == bothModes || suppressed == (m == suppressedOnly)
}

// view is whose eyes a read looks through: the namespaces whose
// exceptions may apply. all is true for a caller who may read every
// namespace and asked for none in particular.
type view struct {
	all        bool
	namespaces []string
}

// viewOf is r's view: the namespace query parameter, within the caller's
// scope; the caller's namespaces without it; every namespace for a
// cluster-wide caller. A namespace outside the scope makes an empty view
// (only cluster exceptions apply), never a wider one.
func viewOf(r *http.Request) (view, error) {
	ns := r.URL.Query().Get("namespace")
	if len(ns) > 63 {
		return view{}, badQuery("namespace must be at most 63 characters")
	}
	if ns == "" {
		return scopeView(r), nil
	}
	if sc, scoped := store.ScopeOf(r.Context()); scoped && !slices.Contains(sc.Namespaces, ns) {
		return view{}, nil
	}
	return view{namespaces: []string{ns}}, nil
}

// runsIn narrows the namespaces a digest runs in to the view's.
func (v view) runsIn(running []string) []string {
	if v.all {
		return running
	}
	var out []string
	for _, ns := range running {
		if slices.Contains(v.namespaces, ns) {
			out = append(out, ns)
		}
	}
	return out
}

// exceptions is the current set (nil without a source: nothing applies).
func (s *Server) exceptions() *exception.Set {
	if s.cfg.Exceptions == nil {
		return nil
	}
	return s.cfg.Exceptions.Set()
}

// digestSuppression is how one report's findings stand in one view.
type digestSuppression struct {
	set        *exception.Set
	runsIn     []string
	suppressed []int64 // finding row ids, sorted
	// decided pairs each suppressed finding with the exception that
	// suppresses it (the VEX export's statements), in id order.
	decided []decidedFinding
	total   int
	// annotates: an imported affected or under_investigation statement
	// may annotate an active finding of the digest.
	annotates bool
	// activeVulns and suppressedVulns are the vulnerability ids with an
	// active, and with a suppressed finding; nil when no exception could
	// apply (every finding is active).
	activeVulns, suppressedVulns map[string]bool
}

// decidedFinding is a suppressed finding and its exception.
type decidedFinding struct {
	key store.FindingKey
	by  *exception.Exception
}

// suppressionOf decides every finding of digest in r's view. It reads the
// findings' keys only when an exception could apply to the digest. Its
// set decides by the time of the call, so that what it decided and what
// the caller decides later with d.set agree.
func (s *Server) suppressionOf(ctx context.Context, v view, digest string, total int) (*digestSuppression, error) {
	set := s.exceptions()
	d := &digestSuppression{set: set.At(set.Now()), total: total}
	if d.set.Len() == 0 {
		return d, nil
	}
	running, err := s.cfg.Store.NamespacesOf(ctx, digest)
	if err != nil {
		return nil, err
	}
	d.runsIn = v.runsIn(running)
	could := d.set.ForDigest(digest, d.runsIn)
	if len(could) == 0 {
		return d, nil
	}
	d.annotates = slices.ContainsFunc(could, func(e *exception.Exception) bool { return e.VEX != nil && !exception.Suppresses(e.Status) })
	keys, err := s.cfg.Store.FindingKeys(ctx, digest)
	if err != nil {
		return nil, err
	}
	d.activeVulns, d.suppressedVulns = map[string]bool{}, map[string]bool{}
	for _, k := range keys {
		if e := d.set.Decide(exception.Finding{Digest: digest, VulnID: k.VulnID, PURL: k.PURL, FixedIn: k.FixedIn}, d.runsIn); e != nil {
			d.suppressed = append(d.suppressed, k.ID)
			d.decided = append(d.decided, decidedFinding{key: k, by: e})
			d.suppressedVulns[k.VulnID] = true
		} else {
			d.activeVulns[k.VulnID] = true
		}
	}
	return d, nil
}

// decide returns the exception that suppresses f of the digest, or nil.
func (d *digestSuppression) decide(digest string, f *report.Finding) *exception.Exception {
	if len(d.suppressed) == 0 {
		return nil
	}
	return d.set.Decide(exceptionFinding(digest, f), d.runsIn)
}

// keepsVuln reports whether vulnerability id has a finding shown in mode m.
func (d *digestSuppression) keepsVuln(id string, m suppressedMode) bool {
	switch {
	case m == bothModes:
		return true
	case d.activeVulns == nil:
		return m == activeOnly
	case m == activeOnly:
		return d.activeVulns[id]
	}
	return d.suppressedVulns[id]
}

// tally counts the suppressed findings.
func (d *digestSuppression) tally() *tally {
	t := &tally{}
	for i := range d.decided {
		t.addKey(&d.decided[i].key)
	}
	return t
}

// filter is the store's id filter for mode (nil: no filter needed).
func (d *digestSuppression) filter(m suppressedMode) *store.IDFilter {
	switch {
	case m == bothModes:
		return nil
	case m == activeOnly && len(d.suppressed) == 0:
		return nil
	}
	return &store.IDFilter{IDs: d.suppressed, Keep: m == suppressedOnly}
}

// newSuppression renders the exception or imported statement e as a
// finding's mark.
func newSuppression(e *exception.Exception) *api.Suppression {
	if e == nil {
		return nil
	}
	out := &api.Suppression{Exception: newRef(e.Ref), Status: api.VEXStatus(e.Status), Justification: optString(e.Justification),
		Statement: e.Statement, ActionStatement: optString(e.ActionStatement), Vex: newProvenance(e.VEX)}
	if e.VEX == nil {
		out.ExpiresAt = &e.ExpiresAt
	}
	return out
}

// newAnnotation renders an imported statement that does not suppress (nil
// for none).
func newAnnotation(e *exception.Exception) *api.VEXAnnotation {
	if e == nil || e.VEX == nil {
		return nil
	}
	return &api.VEXAnnotation{Exception: newRef(e.Ref), Status: api.VEXStatus(e.Status), Statement: e.Statement,
		ActionStatement: optString(e.ActionStatement), Vex: *newProvenance(e.VEX)}
}

func newRef(r exception.Ref) api.ExceptionRef {
	ref := api.ExceptionRef{Kind: api.ExceptionRefKind(r.Kind), Name: r.Name}
	if r.Namespace != "" {
		ref.Namespace = &r.Namespace
	}
	return ref
}

func newProvenance(p *exception.Provenance) *api.VEXProvenance {
	if p == nil {
		return nil
	}
	return &api.VEXProvenance{DocumentId: p.DocumentID, Author: p.Author, Timestamp: p.Timestamp}
}

// exceptionFinding is what deciding f of digest reads.
func exceptionFinding(digest string, f *report.Finding) exception.Finding {
	return exception.Finding{Digest: digest, VulnID: f.ID, PURL: f.Package.PURL, FixedIn: f.FixedIn}
}
