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

// CandidateQuery selects the findings of some vulnerability ids.
type CandidateQuery struct {
	// VulnIDs are the ids, matched case-insensitively (none: no rows).
	VulnIDs []string
	// Digests limits the findings to these reports' (nil: every report in
	// ctx's scope).
	Digests []string
	// Now and SLA decide Candidate.Overdue.
	Now time.Time
	SLA report.SLA
}

// EachCandidate calls fn with each finding of q's vulnerability ids in the
// reports q and ctx's scope select, in (digest, id) order, in one
// statement: the namespaces running each digest come with its rows. The
// candidate passed to fn is reused; fn copies what it keeps. The rows are
// streamed, so memory does not grow with the number of findings; the
// statement timeout bounds the time.
func (s *Store) EachCandidate(ctx context.Context, q CandidateQuery, fn func(*Candidate) error) error {
	if len(q.VulnIDs) == 0 || (q.Digests != nil && len(q.Digests) == 0) {
		return nil
	}
	lower := make([]string, len(q.VulnIDs))
	for i, id := range q.VulnIDs {
		lower[i] = strings.ToLower(id) // findings_vuln_id indexes lower(vuln_id)
	}
	overdue, oargs := overdueSQL("f", q.SLA, q.Now)
	args := append(oargs, textArray(lower))
	where := []string{"lower(f.vuln_id) = ANY(?::text[])"}
	if q.Digests != nil {
		where, args = append(where, "f.digest = ANY(?::text[])"), append(args, textArray(q.Digests))
	}
	where, args = addScope(ctx, "f.digest", where, args)
	// json_agg: namespaces come from events and may hold any character, so
	// no separator is safe.
	query := `WITH c AS (SELECT ` + keyColumns + `, coalesce(` + overdue + `, false) AS overdue FROM findings f` + whereSQL(where) + `),
 n AS (SELECT digest, json_agg(DISTINCT namespace ORDER BY namespace) AS ns FROM inventory WHERE digest IN (SELECT digest FROM c) GROUP BY digest)
 SELECT c.id, c.digest, c.vuln_id, c.purl, c.fixed_in, c.severity, c.kev, c.overdue, n.ns FROM c LEFT JOIN n ON n.digest = c.digest ORDER BY c.digest, c.id`
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
