package httpapi

import (
	"context"
	"strings"
	"time"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/exception"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/vulnmetrics"
)

// VulnMetricsSuppression is what the vulnerability metrics need to count
// only active findings (vulnmetrics.Options.Suppress), with the exceptions
// of now, one set for the whole refresh: how many vulnerability ids they
// could lower, and the function that takes the findings they suppress out
// of the store's counts. Without exceptions, nothing.
//
// The counts follow the views of the API: the fleet gauges
// (crowsnest_vulnerabilities, _kev, crowsnest_vulnerability_top) the
// cluster view of /stats, in which a team's exception never hides a
// finding of an image another namespace also runs; the per-namespace
// gauges (crowsnest_namespace_vulnerabilities, _kev,
// crowsnest_findings_overdue, _kev) each namespace's own view, as
// /workloads and /lifecycle count it. crowsnest_findings_new_7d keeps
// counting every new finding: it reports what arrived, triaged or not.
func (s *Server) VulnMetricsSuppression() vulnmetrics.Suppression {
	set := s.exceptions()
	if set == nil {
		return vulnmetrics.Suppression{}
	}
	ids := map[string]bool{}
	for _, vs := range set.SuppressingVulns() {
		ids[strings.ToUpper(vs.VulnID)] = true
	}
	return vulnmetrics.Suppression{TopSlack: len(ids), Subtract: func(ctx context.Context, st *store.VulnStats, now time.Time) error {
		// Decided at the exceptions' clock, as the API's views decide;
		// overdue at now.
		set := set.At(set.Now())
		if err := s.subtractFleet(ctx, set, st, now); err != nil {
			return err
		}
		return s.subtractPerNamespace(ctx, set, st, now)
	}}
}

// subtractFleet takes out of st's fleet counts the findings of running
// images that set suppresses in the cluster view, and out of each top
// vulnerability the running images in which it is suppressed everywhere.
func (s *Server) subtractFleet(ctx context.Context, set *exception.Set, st *store.VulnStats, now time.Time) error {
	q := s.candidateQuery(set, view{all: true}, nil, now)
	if len(q.VulnIDs) == 0 && len(q.NamespaceVulns) == 0 {
		return nil
	}
	// active[id][digest]: whether a finding of a top id stays active in a
	// running image.
	active := make(map[string]map[string]bool, len(st.TopVulnerabilities))
	for _, v := range st.TopVulnerabilities {
		active[v.ID] = map[string]bool{}
	}
	var running, kev report.Counts
	err := s.cfg.Store.EachCandidate(ctx, q, func(c *store.Candidate) error {
		if len(c.RunsIn) == 0 { // not running: the gauges do not count it
			return nil
		}
		e := set.Decide(exception.Finding{Digest: c.Digest, VulnID: c.VulnID, PURL: c.PURL, FixedIn: c.FixedIn}, c.RunsIn)
		if images, ok := active[c.VulnID]; ok {
			images[c.Digest] = images[c.Digest] || e == nil
		}
		if e == nil {
			return nil
		}
		running.Add(c.Severity)
		if c.KEV {
			kev.Add(c.Severity)
		}
		return nil
	})
	if err != nil {
		return err
	}
	st.Running, st.RunningKEV = minusCounts(st.Running, running), minusCounts(st.RunningKEV, kev)
	for i, v := range st.TopVulnerabilities {
		for _, stays := range active[v.ID] {
			if !stays {
				st.TopVulnerabilities[i].Images--
			}
		}
	}
	return nil
}

// subtractPerNamespace takes out of st's per-namespace counts the findings
// that set suppresses in each namespace's own view.
func (s *Server) subtractPerNamespace(ctx context.Context, set *exception.Set, st *store.VulnStats, now time.Time) error {
	sup, err := s.suppressedPerNamespaceBy(ctx, set, nil, nil, now)
	if err != nil || len(sup) == 0 {
		return err
	}
	byNamespace := map[string]*nsTally{}
	for k, t := range sup {
		n := byNamespace[k.namespace]
		if n == nil {
			n = &nsTally{}
			byNamespace[k.namespace] = n
		}
		n.counts, n.kevCounts, n.overdueCounts = plus(n.counts, t.counts), plus(n.kevCounts, t.kevCounts), plus(n.overdueCounts, t.overdueCounts)
		n.overdueKEV += t.overdueKEV
	}
	for i, n := range st.Namespaces {
		if t := byNamespace[n.Namespace]; t != nil {
			st.Namespaces[i].Counts, st.Namespaces[i].KEV = minusCounts(n.Counts, t.counts), minusCounts(n.KEV, t.kevCounts)
		}
	}
	for i, o := range st.Overdue {
		if t := byNamespace[o.Namespace]; t != nil {
			st.Overdue[i].Counts, st.Overdue[i].KEV = minusCounts(o.Counts, t.overdueCounts), o.KEV-t.overdueKEV
		}
	}
	return nil
}

// plus adds counts severity by severity (minusCounts subtracts).
func plus(a, b report.Counts) report.Counts {
	return report.Counts{Critical: a.Critical + b.Critical, High: a.High + b.High, Medium: a.Medium + b.Medium,
		Low: a.Low + b.Low, Negligible: a.Negligible + b.Negligible, Unknown: a.Unknown + b.Unknown}
}
