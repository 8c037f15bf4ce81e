package httpapi

import (
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/crowsnest-dev/crowsnest/results-api/api"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/exception"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/render"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
)

// tally counts suppressed findings: of one report, or of the fleet.
type tally struct {
	findings, fixable, kev int
	counts                 report.Counts
	// Of the findings of images some namespace runs now (the stats').
	kevRunning, overdue, overdueKEV int
}

func (t *tally) add(c *store.Candidate) {
	t.findings++
	t.counts.Add(c.Severity)
	if c.Fixable() {
		t.fixable++
	}
	if c.KEV {
		t.kev++
	}
	if len(c.RunsIn) > 0 {
		if c.KEV {
			t.kevRunning++
		}
		if c.Overdue {
			t.overdue++
			if c.KEV {
				t.overdueKEV++
			}
		}
	}
}

// addKey counts a suppressed finding of one report (no overdue: reports
// do not count it).
func (t *tally) addKey(k *store.FindingKey) { t.add(&store.Candidate{FindingKey: *k}) }

// suppressedCounts are what exceptions suppress in one view.
type suppressedCounts struct {
	total    tally
	byDigest map[string]*tally
	// vulnImages, for each vulnerability id asked about, are its images
	// (digests) and whether a finding of it stays active there.
	vulnImages map[string]map[string]bool
}

// suppressedIn decides, in view v, the findings that an exception could
// suppress of the reports digests (nil: all in the caller's scope) and
// counts the suppressed ones, per digest and in total, and per image for
// the vulnerability ids vulns. One statement (store.EachCandidate), none
// without an exception that could suppress something in v; a namespaced
// exception is looked for only in the digests its namespace runs.
func (s *Server) suppressedIn(ctx context.Context, v view, digests []string, vulns ...string) (*suppressedCounts, error) {
	return s.suppressedBy(ctx, s.exceptions(), s.now(), v, digests, vulns...)
}

// suppressedBy is suppressedIn with the exceptions set, and findings
// overdue at now.
func (s *Server) suppressedBy(ctx context.Context, set *exception.Set, now time.Time, v view, digests []string, vulns ...string) (*suppressedCounts, error) {
	out := &suppressedCounts{byDigest: map[string]*tally{}, vulnImages: map[string]map[string]bool{}}
	for _, id := range vulns {
		out.vulnImages[id] = map[string]bool{}
	}
	q := s.candidateQuery(set, v, digests, now)
	var (
		runsIn     []string
		lastDigest string // never a digest: the first row starts one
		cur        *tally
	)
	err := s.cfg.Store.EachCandidate(ctx, q,
		func(c *store.Candidate) error {
			if c.Digest != lastDigest {
				runsIn, lastDigest, cur = v.runsIn(c.RunsIn), c.Digest, nil
			}
			e := set.Decide(exception.Finding{Digest: c.Digest, VulnID: c.VulnID, PURL: c.PURL, FixedIn: c.FixedIn}, runsIn)
			if images, ok := out.vulnImages[c.VulnID]; ok {
				images[c.Digest] = images[c.Digest] || e == nil
			}
			if e == nil {
				return nil
			}
			if cur == nil {
				cur = &tally{}
				out.byDigest[c.Digest] = cur
			}
			cur.add(c)
			out.total.add(c)
			return nil
		})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// candidateQuery selects, of the reports digests (nil: all in ctx's
// scope), the findings that set could suppress in view v.
func (s *Server) candidateQuery(set *exception.Set, v view, digests []string, now time.Time) store.CandidateQuery {
	q := store.CandidateQuery{Digests: digests, Now: now, SLA: s.cfg.SLA}
	for _, vs := range set.SuppressingVulns() {
		switch {
		case vs.Namespace == "":
			q.VulnIDs = append(q.VulnIDs, vs.VulnID)
		case v.all || slices.Contains(v.namespaces, vs.Namespace):
			q.NamespaceVulns = append(q.NamespaceVulns, store.NamespaceVuln{Namespace: vs.Namespace, VulnID: vs.VulnID})
		}
	}
	return q
}

// suppressedImages is how many images carry vulnerability id only in
// findings suppressed in the view (id must have been asked about).
func (sc *suppressedCounts) suppressedImages(id string) int {
	n := 0
	for _, active := range sc.vulnImages[id] {
		if !active {
			n++
		}
	}
	return n
}

// activeSummary makes sum count only the findings that t (nil: none)
// does not suppress, and tells what it does.
func activeSummary(sum *api.ReportSummary, t *tally) {
	if t == nil {
		t = &tally{}
	}
	sum.Counts, sum.Fixable, sum.Findings, sum.Kev = active(sum.Counts, t), sum.Fixable-t.fixable, sum.Findings-t.findings, sum.Kev-t.kev
	c := t.api()
	sum.Suppressed = &c
}

// activeDetail does for a report's detail what activeSummary does.
func activeDetail(d *api.ReportDetail, t *tally) {
	d.Counts, d.Fixable, d.Kev = active(d.Counts, t), d.Fixable-t.fixable, d.Kev-t.kev
	d.Suppressed = t.api()
}

// api renders t as a report's suppressed counts.
func (t *tally) api() api.SuppressedCounts {
	return api.SuppressedCounts{Findings: t.findings, Counts: render.SeverityCounts(t.counts), Fixable: t.fixable, Kev: t.kev}
}

// active is all minus the suppressed per severity.
func active(all api.SeverityCounts, t *tally) api.SeverityCounts {
	c := t.counts
	return api.SeverityCounts{Critical: all.Critical - c.Critical, High: all.High - c.High, Medium: all.Medium - c.Medium,
		Low: all.Low - c.Low, Negligible: all.Negligible - c.Negligible, Unknown: all.Unknown - c.Unknown}
}

// scopeView is the view of a read that takes no namespace parameter: the
// caller's namespaces (all for a cluster-wide caller).
func scopeView(r *http.Request) view {
	if sc, scoped := store.ScopeOf(r.Context()); scoped {
		return view{namespaces: sc.Namespaces}
	}
	return view{all: true}
}
