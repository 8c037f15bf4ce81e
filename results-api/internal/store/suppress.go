package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// FindingKey is what deciding a finding's suppression reads: its row id
// (for FindingQuery.IDs), id, package URL and fix versions.
type FindingKey struct {
	ID      int64
	Digest  string
	VulnID  string
	PURL    string
	FixedIn []string
}

// maxVulnFindings bounds FindingsOfVulns.
const maxVulnFindings = 200000

// FindingKeys returns the keys of every finding of digest (at most a
// report's 50,000), in id order.
func (s *Store) FindingKeys(ctx context.Context, digest string) ([]FindingKey, error) {
	out, err := s.scanKeys(ctx, `SELECT id, digest, vuln_id, purl, fixed_in FROM findings WHERE digest = ? ORDER BY id`, digest)
	if err != nil {
		return nil, s.fail("finding keys", err)
	}
	return out, nil
}

// FindingsOfVulns returns the keys of the findings, in every report, of
// the vulnerability ids (case-insensitive), at most 200,000.
func (s *Store) FindingsOfVulns(ctx context.Context, ids []string) ([]FindingKey, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	lower := make([]string, len(ids))
	for i, id := range ids {
		lower[i] = strings.ToLower(id) // findings_vuln_id indexes lower(vuln_id)
	}
	out, err := s.scanKeys(ctx, `SELECT id, digest, vuln_id, purl, fixed_in FROM findings WHERE lower(vuln_id) = ANY(?::text[])
 ORDER BY id LIMIT ?`, textArray(lower), maxVulnFindings)
	if err != nil {
		return nil, s.fail("findings of vulnerabilities", err)
	}
	return out, nil
}

// NamespacesOfDigests returns, per digest, the namespaces it runs in now
// (sorted), whatever ctx's scope: callers intersect with the view.
func (s *Store) NamespacesOfDigests(ctx context.Context, digests []string) (map[string][]string, error) {
	out := map[string][]string{}
	if len(digests) == 0 {
		return out, nil
	}
	var rows []struct{ Digest, Namespace string }
	err := s.db.WithContext(ctx).Raw(`SELECT DISTINCT digest, namespace FROM inventory WHERE digest = ANY(?::text[]) ORDER BY digest, namespace`,
		textArray(digests)).Scan(&rows).Error
	if err != nil {
		return nil, s.fail("namespaces of digests", err)
	}
	for _, r := range rows {
		out[r.Digest] = append(out[r.Digest], r.Namespace)
	}
	return out, nil
}

// IDFilter keeps (Keep) or leaves out (!Keep) the findings whose row ids
// are IDs.
type IDFilter struct {
	IDs  []int64
	Keep bool
}

// sql is the condition on the findings' id column.
func (f *IDFilter) sql() (string, []any) {
	var b strings.Builder
	b.WriteByte('{')
	for i, id := range f.IDs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(id, 10))
	}
	b.WriteByte('}')
	if f.Keep {
		return "id = ANY(?::bigint[])", []any{b.String()}
	}
	return "id <> ALL(?::bigint[])", []any{b.String()}
}

// scanKeys runs a query of (id, digest, vuln_id, purl, fixed_in) rows and
// scans them by hand: gorm's reflection cost ~4 µs a row, 0.4 s for the
// 100,000 findings an audit of 1,000 exceptions reads.
func (s *Store) scanKeys(ctx context.Context, query string, args ...any) ([]FindingKey, error) {
	rows, err := s.db.WithContext(ctx).Raw(query, args...).Rows()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []FindingKey
	var fixed []byte
	for rows.Next() {
		var k FindingKey
		if err := rows.Scan(&k.ID, &k.Digest, &k.VulnID, &k.PURL, &fixed); err != nil {
			return nil, err
		}
		if len(fixed) > 0 {
			if err := json.Unmarshal(fixed, &k.FixedIn); err != nil {
				return nil, fmt.Errorf("finding %d fixed_in: %w", k.ID, err)
			}
		}
		out = append(out, k)
	}
	return out, rows.Err()
}
