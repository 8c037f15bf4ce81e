package store

import (
	"context"
	"strings"
	"time"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
)

// NamespaceCandidate is a finding of an image running in Namespace that an
// exception could suppress in that namespace's view, with what the
// per-namespace counts (workloads, lifecycle) read.
type NamespaceCandidate struct {
	Namespace string
	FindingKey
	FirstSeen time.Time // zero when unknown
	Overdue   bool      // past its SLA deadline (the query's Now and SLA)
}

// NamespaceCandidateQuery selects, per namespace running a digest, the
// digest's findings of VulnIDs (cluster exceptions) and of NamespaceVulns
// in their namespace (namespaced exceptions).
type NamespaceCandidateQuery struct {
	VulnIDs        []string
	NamespaceVulns []NamespaceVuln
	// Namespaces and Digests limit the (namespace, digest) pairs (nil:
	// every one in ctx's scope).
	Namespaces, Digests []string
	Now                 time.Time
	SLA                 report.SLA
}

// EachNamespaceCandidate calls fn with each finding q selects for each
// namespace in ctx's scope that runs its digest now, in (namespace,
// digest, id) order, in one statement (an image running in two namespaces
// is handed out once for each). The candidate passed to fn is reused; the
// rows are streamed.
func (s *Store) EachNamespaceCandidate(ctx context.Context, q NamespaceCandidateQuery, fn func(*NamespaceCandidate) error) error {
	if (len(q.VulnIDs) == 0 && len(q.NamespaceVulns) == 0) || (q.Digests != nil && len(q.Digests) == 0) ||
		(q.Namespaces != nil && len(q.Namespaces) == 0) {
		return nil
	}
	lower := make([]string, len(q.VulnIDs))
	for i, id := range q.VulnIDs {
		lower[i] = strings.ToLower(id) // findings_vuln_id indexes lower(vuln_id)
	}
	nss, nsIDs := make([]string, len(q.NamespaceVulns)), make([]string, len(q.NamespaceVulns))
	for i, nv := range q.NamespaceVulns {
		nss[i], nsIDs[i] = nv.Namespace, strings.ToLower(nv.VulnID)
	}
	var where []string
	var args []any
	if sc, ok := ScopeOf(ctx); ok {
		where, args = append(where, "namespace = ANY(?::text[])"), append(args, textArray(sc.Namespaces))
	}
	if q.Namespaces != nil {
		where, args = append(where, "namespace = ANY(?::text[])"), append(args, textArray(q.Namespaces))
	}
	if q.Digests != nil {
		where, args = append(where, "digest = ANY(?::text[])"), append(args, textArray(q.Digests))
	}
	overdue, oargs := overdueSQL("f", q.SLA, q.Now)
	query := `WITH x AS (SELECT * FROM unnest(?::text[], ?::text[]) AS x(namespace, vuln_id)),
 d AS (SELECT DISTINCT namespace, digest FROM inventory` + whereSQL(where) + `)
 SELECT ` + keyColumns + `, f.first_seen, coalesce(` + overdue + `, false), d.namespace
 FROM d JOIN findings f ON f.digest = d.digest
 WHERE lower(f.vuln_id) = ANY(?::text[]) OR (d.namespace, lower(f.vuln_id)) IN (SELECT namespace, vuln_id FROM x)
 ORDER BY d.namespace, f.digest, f.id`
	all := append(append(append([]any{textArray(nss), textArray(nsIDs)}, args...), oargs...), textArray(lower))
	rows, err := s.db.WithContext(ctx).Raw(query, all...).Rows()
	if err != nil {
		return s.fail("namespace suppression candidates", err)
	}
	defer rows.Close()
	var (
		sc        keyScanner
		c         NamespaceCandidate
		firstSeen *time.Time
	)
	for rows.Next() {
		if err := sc.scan(rows, &c.FindingKey, &firstSeen, &c.Overdue, &c.Namespace); err != nil {
			return s.fail("namespace suppression candidates", err)
		}
		c.FirstSeen = time.Time{}
		if firstSeen != nil {
			c.FirstSeen = *firstSeen
		}
		if err := fn(&c); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return s.fail("namespace suppression candidates", err)
	}
	return nil
}
