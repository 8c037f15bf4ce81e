package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// EachFleetCandidate calls fn with each of q's findings (those a fleet
// export of q walks; q.Limit is ignored) whose vulnerability id is one of
// vulnIDs (case-insensitive), with the namespaces running its digest
// (Candidate.RunsIn, whatever ctx's scope; Overdue is not set), in
// (digest, id) order, in one statement. The candidate passed to fn is
// reused; the rows are streamed. A fleet export counts with it what
// exceptions suppress before it streams a row.
func (s *Store) EachFleetCandidate(ctx context.Context, q FleetQuery, vulnIDs []string, fn func(*Candidate) error) error {
	if len(vulnIDs) == 0 {
		return nil
	}
	lower := make([]string, len(vulnIDs))
	for i, id := range vulnIDs {
		lower[i] = strings.ToLower(id) // findings_vuln_id indexes lower(vuln_id)
	}
	where, args := fleetWhere(ctx, q)
	where, args = append(where, "lower(f.vuln_id) = ANY(?::text[])"), append(args, textArray(lower))
	query := `WITH c AS (SELECT ` + keyColumns + ` FROM findings f, reports r` + whereSQL(where) + `),
 n AS (SELECT digest, json_agg(DISTINCT namespace ORDER BY namespace) AS ns FROM inventory
  WHERE digest IN (SELECT digest FROM c) GROUP BY digest)
 SELECT ` + strings.ReplaceAll(keyColumns, "f.", "c.") + `, n.ns FROM c LEFT JOIN n ON n.digest = c.digest ORDER BY c.digest, c.id`
	rows, err := s.db.WithContext(ctx).Raw(query, args...).Rows()
	if err != nil {
		return s.fail("fleet suppression candidates", err)
	}
	defer rows.Close()
	var (
		sc         keyScanner
		c          Candidate
		ns, lastNS []byte
	)
	for rows.Next() {
		if err := sc.scan(rows, &c.FindingKey, &ns); err != nil {
			return s.fail("fleet suppression candidates", err)
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
		return s.fail("fleet suppression candidates", err)
	}
	return nil
}
