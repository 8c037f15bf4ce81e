package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
)

// FindingKey is what deciding a finding's suppression reads: its row id
// (for FindingQuery.IDs), id, package URL and fix versions; and what
// counting it reads: its severity and KEV listing.
type FindingKey struct {
	ID       int64
	Digest   string
	VulnID   string
	PURL     string
	FixedIn  []string
	Severity report.Severity
	KEV      bool
}

// Fixable reports whether a fix version is known (as report.Finding's).
func (k *FindingKey) Fixable() bool { return len(k.FixedIn) > 0 }

// keyColumns are the columns scanKeys reads, on findings f.
const keyColumns = `f.id, f.digest, f.vuln_id, f.purl, f.fixed_in, f.severity, f.kev`

// maxVulnFindings bounds FindingsOfVulns.
const maxVulnFindings = 200000

// FindingKeys returns the keys of every finding of digest (at most a
// report's 50,000), in id order.
func (s *Store) FindingKeys(ctx context.Context, digest string) ([]FindingKey, error) {
	out, err := s.scanKeys(ctx, `SELECT `+keyColumns+` FROM findings f WHERE f.digest = ? ORDER BY f.id`, digest)
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
	out, err := s.scanKeys(ctx, `SELECT `+keyColumns+` FROM findings f WHERE lower(f.vuln_id) = ANY(?::text[])
 ORDER BY f.id LIMIT ?`, textArray(lower), maxVulnFindings)
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

// scanKeys runs a query of keyColumns rows and scans them by hand: gorm's
// reflection cost ~4 µs a row, 0.4 s for the 100,000 findings an audit of
// 1,000 exceptions reads.
func (s *Store) scanKeys(ctx context.Context, query string, args ...any) ([]FindingKey, error) {
	rows, err := s.db.WithContext(ctx).Raw(query, args...).Rows()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []FindingKey
	var sc keyScanner
	for rows.Next() {
		var k FindingKey
		if err := sc.scan(rows, &k); err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, rows.Err()
}

// keyScanner scans keyColumns, then extra columns, into a FindingKey.
type keyScanner struct {
	fixed    []byte
	severity int
}

func (sc *keyScanner) scan(rows *sql.Rows, k *FindingKey, extra ...any) error {
	dest := append([]any{&k.ID, &k.Digest, &k.VulnID, &k.PURL, &sc.fixed, &sc.severity, &k.KEV}, extra...)
	if err := rows.Scan(dest...); err != nil {
		return err
	}
	k.Severity, k.FixedIn = report.Severity(sc.severity), nil
	if len(sc.fixed) > 0 {
		if err := json.Unmarshal(sc.fixed, &k.FixedIn); err != nil {
			return fmt.Errorf("finding %d fixed_in: %w", k.ID, err)
		}
	}
	return nil
}
