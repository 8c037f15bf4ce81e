package store

import (
	"context"
	"fmt"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
)

// A VulnRule is what a report says of one vulnerability id, over all its
// findings of it: the worst severity and score, and a description and
// advisory URL.
type VulnRule struct {
	ID          string
	Severity    report.Severity
	CVSSScore   *float64
	Description string
	URL         string
}

// WalkVulnerabilities calls fn with the distinct vulnerabilities of a
// report's findings, in pages of up to page ids ordered as WalkFindings
// orders findings (vulnerability id first), so that a caller writing
// both can number one from the other. Only one page is held at a time.
func (s *Store) WalkVulnerabilities(ctx context.Context, digest string, page int, fn func([]VulnRule) error) error {
	after, first := "", true
	for {
		var rows []struct {
			VulnID      string
			Severity    int
			CVSSScore   *float64 `gorm:"column:cvss_score"`
			Description string
			URL         string `gorm:"column:url"`
		}
		err := s.db.WithContext(ctx).Raw(`SELECT DISTINCT ON (vuln_id) vuln_id, severity, cvss_score, description, url
 FROM findings WHERE digest = ? AND (? OR vuln_id > ?)
 ORDER BY vuln_id, severity DESC, cvss_score DESC NULLS LAST, (url = ''), id LIMIT ?`, digest, first, after, page).Scan(&rows).Error
		if err != nil {
			return s.fail("walk vulnerabilities", err)
		}
		if len(rows) == 0 {
			return nil
		}
		out := make([]VulnRule, len(rows))
		for i, r := range rows {
			out[i] = VulnRule{ID: r.VulnID, Severity: report.Severity(r.Severity), CVSSScore: r.CVSSScore, Description: r.Description, URL: r.URL}
		}
		if err := fn(out); err != nil {
			return err
		}
		if len(rows) < page {
			return nil
		}
		after, first = rows[len(rows)-1].VulnID, false
	}
}

// WalkFindings calls fn with a report's findings in pages of up to page,
// ordered by vulnerability id, package name and version (ByID), so that
// an export of 50,000 findings holds one page at a time. The keyset
// pagination of GetReport makes each page as cheap as the first.
func (s *Store) WalkFindings(ctx context.Context, digest string, page int, fn func([]report.Finding) error) error {
	if page < 1 {
		return fmt.Errorf("walk findings: page %d, want at least 1", page)
	}
	keys := findingOrders[ByID]
	var after *findingCursor
	for {
		db := s.db.WithContext(ctx).Where("digest = ?", digest)
		if after != nil {
			cond, args := keysetAfter(keys, after)
			db = db.Where(cond, args...)
		}
		var rows []findingRow
		if err := db.Order(orderBy(keys)).Limit(page).Find(&rows).Error; err != nil {
			return s.fail("walk findings", err)
		}
		if len(rows) == 0 {
			return nil
		}
		out := make([]report.Finding, len(rows))
		for i, f := range rows {
			out[i] = f.finding()
		}
		if err := fn(out); err != nil {
			return err
		}
		if len(rows) < page {
			return nil
		}
		last := rows[len(rows)-1]
		after = &findingCursor{VulnID: last.VulnID, PkgName: last.PkgName, PkgVersion: last.PkgVersion, ID: last.ID}
	}
}

// RunningIn returns the workloads running digest now, within ctx's scope.
func (s *Store) RunningIn(ctx context.Context, digest string) ([]report.Workload, error) {
	items := []report.Summary{{Digest: digest}}
	if err := s.fillRunningIn(ctx, items); err != nil {
		return nil, err
	}
	return items[0].RunningIn, nil
}
