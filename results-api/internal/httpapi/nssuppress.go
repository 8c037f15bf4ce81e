package httpapi

import (
	"context"
	"slices"
	"time"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/exception"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
)

// nsDigest is an image in one namespace.
type nsDigest struct{ namespace, digest string }

// nsTally counts the findings of one image that exceptions suppress in
// one namespace's view, as /workloads and /lifecycle count them.
type nsTally struct {
	findings, fixable   int
	counts              report.Counts
	ages                [4]int // as store.NamespaceLifecycle.Ages
	overdue, overdueKEV int
	// By severity, for the vulnerability metrics: the KEV-listed findings
	// and the overdue ones.
	kevCounts, overdueCounts report.Counts
}

// suppressedPerNamespace decides the findings of the images running in
// each namespace (of namespaces and digests; nil: every one in the
// caller's scope) in that namespace's view — its exceptions and the
// cluster's, as a view of that one namespace does — and counts the
// suppressed ones per namespace and image. One statement
// (store.EachNamespaceCandidate), none without an exception that could
// suppress something there.
func (s *Server) suppressedPerNamespace(ctx context.Context, namespaces, digests []string, now time.Time) (map[nsDigest]*nsTally, error) {
	set := s.exceptions()
	return s.suppressedPerNamespaceBy(ctx, set.At(set.Now()), namespaces, digests, now)
}

// suppressedPerNamespaceBy is suppressedPerNamespace with the exceptions
// set.
func (s *Server) suppressedPerNamespaceBy(ctx context.Context, set *exception.Set, namespaces, digests []string, now time.Time) (map[nsDigest]*nsTally, error) {
	out := map[nsDigest]*nsTally{}
	q := store.NamespaceCandidateQuery{Namespaces: namespaces, Digests: digests, Now: now, SLA: s.cfg.SLA}
	for _, vs := range set.SuppressingVulns() {
		switch {
		case vs.Namespace == "":
			q.VulnIDs = append(q.VulnIDs, vs.VulnID)
		case namespaces == nil || slices.Contains(namespaces, vs.Namespace):
			q.NamespaceVulns = append(q.NamespaceVulns, store.NamespaceVuln{Namespace: vs.Namespace, VulnID: vs.VulnID})
		}
	}
	var runsIn [1]string
	err := s.cfg.Store.EachNamespaceCandidate(ctx, q, func(c *store.NamespaceCandidate) error {
		runsIn[0] = c.Namespace
		if set.Decide(exception.Finding{Digest: c.Digest, VulnID: c.VulnID, PURL: c.PURL, FixedIn: c.FixedIn}, runsIn[:]) == nil {
			return nil
		}
		k := nsDigest{c.Namespace, c.Digest}
		t := out[k]
		if t == nil {
			t = &nsTally{}
			out[k] = t
		}
		t.findings++
		t.counts.Add(c.Severity)
		if c.Fixable() {
			t.fixable++
		}
		if !c.FirstSeen.IsZero() {
			t.ages[ageBucket(c.FirstSeen, now)]++
		}
		if c.KEV {
			t.kevCounts.Add(c.Severity)
		}
		if c.Overdue {
			t.overdue++
			t.overdueCounts.Add(c.Severity)
			if c.KEV {
				t.overdueKEV++
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ageBucket is the store.NamespaceLifecycle.Ages bucket of a finding first
// seen at first: age in whole days d ≤ n ⇔ first > now − (n+1) days.
func ageBucket(first, now time.Time) int {
	for i, n := range store.AgeBuckets {
		if first.After(now.Add(-time.Duration(n+1) * report.Day)) {
			return i
		}
	}
	return len(store.AgeBuckets)
}
