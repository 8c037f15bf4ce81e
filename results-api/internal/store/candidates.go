package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
)

// Candidate is a finding an exception could suppress, with what counting
// it reads.
type Candidate struct {
	FindingKey
	// Overdue: past its SLA deadline (CandidateQuery's Now and SLA).
	Overdue bool
	// RunsIn are the namespaces that run its digest now (sorted), whatever
	// ctx's scope: callers intersect them with their view. Empty when no
	// namespace runs it.
	RunsIn []string
}

// CandidateQuery selects the findings that some exceptions could
// suppress: of VulnIDs in any report, and of NamespaceVulns in the reports
// of digests running in their namespace.
type CandidateQuery struct {
	// VulnIDs are matched case-insensitively, in every report (cluster
	// exceptions).
	VulnIDs []string
	// NamespaceVulns are matched in the reports of digests their namespace
	// runs now (namespaced exceptions).
	NamespaceVulns []NamespaceVuln
	// Digests limits the findings to these reports' (nil: every report in
	// ctx's scope).
	Digests []string
	// Now and SLA decide Candidate.Overdue.
	Now time.Time
	SLA report.SLA
}

// NamespaceVuln is a vulnerability id (case-insensitive) in one namespace.
type NamespaceVuln struct{ Namespace, VulnID string }

// EachCandidate calls fn with each finding q selects in the reports q and
// ctx's scope select, in (digest, id) order, in one statement: the
// namespaces running each digest come with its rows. The candidate passed
// to fn is reused; fn copies what it keeps. The rows are streamed, so
// memory does not grow with the number of findings; the statement timeout
// bounds the time.
func (s *Store) EachCandidate(ctx context.Context, q CandidateQuery, fn func(*Candidate) error) error {
	if (len(q.VulnIDs) == 0 && len(q.NamespaceVulns) == 0) || (q.Digests != nil && len(q.Digests) == 0) {
		return nil
	}
	query, args := candidateSQL(ctx, q)
	rows, err := s.db.WithContext(ctx).Raw(query, args...).Rows()
	if err != nil {
		return s.fail("suppression candidates", err)
	}
	defer rows.Close()
	var (
		sc         keyScanner
		c          Candidate
		ns, lastNS []byte
	)
	for rows.Next() {
		if err := sc.scan(rows, &c.FindingKey, &c.Overdue, &ns); err != nil {
			return s.fail("suppression candidates", err)
		}
		if c.RunsIn == nil || string(ns) != string(lastNS) {
			c.RunsIn = []string{}
			if len(ns) > 0 {
				if err := json.Unmarshal(ns, &c.RunsIn); err != nil {
					return fmt.Errorf("namespaces of %s: %w", c.Digest, err)
				}
			}
			lastNS = append(lastNS[:0], ns...)
		}
		if err := fn(&c); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return s.fail("suppression candidates", err)
	}
	return nil
}

// candidateSQL is EachCandidate's statement for q in ctx's scope.
func candidateSQL(ctx context.Context, q CandidateQuery) (string, []any) {
	lower := make([]string, len(q.VulnIDs))
	for i, id := range q.VulnIDs {
		lower[i] = strings.ToLower(id) // findings_vuln_id indexes lower(vuln_id)
	}
	nss, nsIDs := make([]string, len(q.NamespaceVulns)), make([]string, len(q.NamespaceVulns))
	for i, nv := range q.NamespaceVulns {
		nss[i], nsIDs[i] = nv.Namespace, strings.ToLower(nv.VulnID)
	}
	// The reports asked for, in both branches, so that each starts from
	// the fewest rows.
	var only []string
	var onlyArgs []any
	if q.Digests != nil {
		only, onlyArgs = append(only, "f.digest = ANY(?::text[])"), append(onlyArgs, textArray(q.Digests))
	}
	only, onlyArgs = addScope(ctx, "f.digest", only, onlyArgs)
	and := ""
	if len(only) > 0 {
		and = " AND " + strings.Join(only, " AND ")
	}
	// The same on the inventory, so that a page's rows are found through
	// its (digest, namespace) index.
	invAnd, nWhere := "", ""
	var invArgs []any
	if q.Digests != nil {
		invAnd, nWhere, invArgs = " AND i.digest = ANY(?::text[])", "digest = ANY(?::text[]) AND ", []any{textArray(q.Digests)}
	}
	overdue, oargs := overdueSQL("c", q.SLA, q.Now)
	args := append([]any{textArray(nss), textArray(nsIDs), textArray(lower)}, onlyArgs...)
	args = append(append(append(append(args, onlyArgs...), invArgs...), invArgs...), oargs...)
	// A UNION of two sets: the ids of cluster exceptions through the
	// lower(vuln_id) index; the namespaced ids only where their namespace
	// runs the digest, by joining the findings to the inventory first and
	// then to the few (namespace, id) pairs (joining the pairs to the
	// inventory first makes tens of thousands of (digest, id) pairs to look
	// up at 1,000 exceptions). json_agg: namespaces come from events and
	// may hold any character, so no separator is safe.
	cols := "f.id, f.digest, f.vuln_id, f.purl, f.fixed_in, f.severity, f.kev, f.first_seen, f.kev_since"
	query := `WITH x AS (SELECT * FROM unnest(?::text[], ?::text[]) AS x(namespace, vuln_id)),
 c AS (SELECT ` + cols + ` FROM findings f WHERE lower(f.vuln_id) = ANY(?::text[])` + and + `
  UNION SELECT ` + cols + ` FROM findings f JOIN inventory i ON i.digest = f.digest
   WHERE (i.namespace, lower(f.vuln_id)) IN (SELECT namespace, vuln_id FROM x)` + and + invAnd + `),
 n AS (SELECT digest, json_agg(DISTINCT namespace ORDER BY namespace) AS ns FROM inventory
  WHERE ` + nWhere + `digest IN (SELECT digest FROM c) GROUP BY digest)
 SELECT c.id, c.digest, c.vuln_id, c.purl, c.fixed_in, c.severity, c.kev, coalesce(` + overdue + `, false), n.ns
 FROM c LEFT JOIN n ON n.digest = c.digest ORDER BY c.digest, c.id`
	return query, args
}
