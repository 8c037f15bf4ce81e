package store

import (
	"context"
	"fmt"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
)

// A FleetFinding is one finding of one image, with where the image runs
// (within the reader's scope).
type FleetFinding struct {
	Image, Digest string
	// The report's provenance: the Grype release and DB its findings
	// were matched with ("" when the report named none).
	GrypeVersion, DBBuilt, DBSchema string
	report.Finding
	RunningIn []report.Workload
}

// FleetQuery selects the findings of the images a report list with the
// same ListQuery would show (its Limit, Cursor and Sort are ignored), at
// most Limit of them. MinSeverity and FixableOnly also keep only the
// findings that match, not every finding of a matching image.
type FleetQuery struct {
	ListQuery
	Limit int
	Age   AgeFilter // keeps overdue or old findings
}

// fleetWhere is the WHERE of q's findings (f joined to reports r).
func fleetWhere(ctx context.Context, q FleetQuery) ([]string, []any) {
	where, args := listFilters(ctx, q.ListQuery)
	where = append([]string{"f.digest = r.digest"}, where...)
	if q.MinSeverity > report.Unknown {
		where, args = append(where, "f.severity >= ?"), append(args, int(q.MinSeverity))
	}
	if q.FixableOnly {
		where = append(where, "f.fixable")
	}
	where, args = findingRiskFilters("f", q.Risk, where, args)
	return q.Age.filters("f", where, args)
}

// CountFleetFindings counts q's findings, but no further than upTo: the
// export says whether it was cut before it streams a row.
func (s *Store) CountFleetFindings(ctx context.Context, q FleetQuery, upTo int) (int, error) {
	where, args := fleetWhere(ctx, q)
	var n int
	err := s.db.WithContext(ctx).Raw(`SELECT count(*) FROM (SELECT 1 FROM findings f, reports r`+whereSQL(where)+
		` LIMIT ?) x`, append(args, upTo)...).Scan(&n).Error
	if err != nil {
		return 0, s.fail("count fleet findings", err)
	}
	return n, nil
}

// WalkFleetFindings calls fn with q's findings in pages of up to page,
// ordered by digest and finding, until q.Limit findings were handed out.
// Pages are keyset-paginated on (digest, finding id): each page is one
// short query, so no connection is held while the client reads.
func (s *Store) WalkFleetFindings(ctx context.Context, q FleetQuery, page int, fn func([]FleetFinding) error) error {
	if page < 1 || q.Limit < 1 {
		return fmt.Errorf("walk fleet findings: page %d, limit %d, want at least 1", page, q.Limit)
	}
	baseWhere, baseArgs := fleetWhere(ctx, q)
	left := q.Limit
	afterDigest, afterID := "", int64(0)
	running := map[string][]report.Workload{} // of the last page's digests
	for left > 0 {
		where, args := append([]string(nil), baseWhere...), append([]any(nil), baseArgs...)
		if afterDigest != "" {
			where, args = append(where, "(f.digest, f.id) > (?, ?)"), append(args, afterDigest, afterID)
		}
		n := min(page, left)
		var rows []fleetRow
		sql := `SELECT r.image, r.grype_version, r.db_built, r.db_schema, f.id, f.digest, f.vuln_id, f.source, f.severity, f.cvss_score, f.cvss_vector,
 f.pkg_name, f.pkg_version, f.pkg_type, f.purl, f.fixed_in, f.description, f.url, f.epss, f.kev, f.risk,
 f.first_seen, f.kev_since FROM findings f, reports r` + whereSQL(where) + ` ORDER BY f.digest, f.id LIMIT ?`
		if err := s.db.WithContext(ctx).Raw(sql, append(args, n)...).Scan(&rows).Error; err != nil {
			return s.fail("walk fleet findings", err)
		}
		if len(rows) == 0 {
			return nil
		}
		var items []report.Summary
		for _, r := range rows {
			if _, ok := running[r.Finding.Digest]; !ok && (len(items) == 0 || items[len(items)-1].Digest != r.Finding.Digest) {
				items = append(items, report.Summary{Digest: r.Finding.Digest})
			}
		}
		if err := s.fillRunningIn(ctx, items); err != nil {
			return err
		}
		next := make(map[string][]report.Workload, len(items)+1)
		if w, ok := running[rows[0].Finding.Digest]; ok {
			next[rows[0].Finding.Digest] = w // the digest the last page ended on
		}
		for _, it := range items {
			next[it.Digest] = it.RunningIn
		}
		running = next
		out := make([]FleetFinding, len(rows))
		for i, r := range rows {
			out[i] = FleetFinding{Image: r.Image, Digest: r.Finding.Digest, GrypeVersion: r.GrypeVersion, DBBuilt: r.DBBuilt, DBSchema: r.DBSchema,
				Finding: r.Finding.finding(), RunningIn: running[r.Finding.Digest]}
		}
		if err := fn(out); err != nil {
			return err
		}
		left -= len(rows)
		if len(rows) < n {
			return nil
		}
		afterDigest, afterID = rows[len(rows)-1].Finding.Digest, rows[len(rows)-1].Finding.ID
	}
	return nil
}

// fleetRow is a finding's row with its image and its report's provenance. gorm flattens the embedded
// row's columns, so the one list of a finding's columns (findingRow) serves.
type fleetRow struct {
	Image        string
	GrypeVersion string
	DBBuilt      string     `gorm:"column:db_built"`
	DBSchema     string     `gorm:"column:db_schema"`
	Finding      findingRow `gorm:"embedded"`
}
