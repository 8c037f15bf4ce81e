package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
)

// FindingOrder orders a report's findings.
type FindingOrder string

// Finding orders.
const (
	BySeverity FindingOrder = "severity"
	ByID       FindingOrder = "id"
	ByPackage  FindingOrder = "package"
	// ByRisk orders by Grype's risk score (KEV listing, EPSS and
	// severity), then as BySeverity: the default.
	ByRisk FindingOrder = "risk"
)

// FindingQuery selects one page of a report's findings.
type FindingQuery struct {
	Order  FindingOrder // ByRisk when empty
	Limit  int          // findings per page, at least 1
	Cursor string       // a previous page's NextCursor for the same Order; empty for the first page
	Risk   RiskFilter   // keeps KEV-listed findings, or those at or above an EPSS score
	IDs    *IDFilter    // keeps or leaves out findings by row id (suppressed ones); nil: all
	Age    AgeFilter    // keeps overdue or old findings
}

// ReportPage is a report's summary with one page of its findings.
type ReportPage struct {
	report.Report        // the summary (Findings counts every page) and this page's FindingList
	NextCursor    string // empty on the last page
}

// findingKey is one column of a finding order. The findings' id, unique,
// ends every order, so that a cursor names exactly one position.
type findingKey struct {
	col       string
	desc      bool
	nullsLast bool // the column may be NULL; NULLs sort after every value
	value     func(*findingCursor) any
}

var (
	keySeverity = findingKey{col: "severity", desc: true, value: func(c *findingCursor) any { return c.Severity }}
	keyCVSS     = findingKey{col: "cvss_score", desc: true, nullsLast: true, value: func(c *findingCursor) any {
		if c.CVSS == nil {
			return nil
		}
		return *c.CVSS
	}}
	keyVulnID  = findingKey{col: "vuln_id", value: func(c *findingCursor) any { return c.VulnID }}
	keyPkgName = findingKey{col: "pkg_name", value: func(c *findingCursor) any { return c.PkgName }}
	keyPkgVer  = findingKey{col: "pkg_version", value: func(c *findingCursor) any { return c.PkgVersion }}
	keyID      = findingKey{col: "id", value: func(c *findingCursor) any { return c.ID }}
	keyRisk    = findingKey{col: "risk", desc: true, value: func(c *findingCursor) any { return c.Risk }}
)

var findingOrders = map[FindingOrder][]findingKey{
	BySeverity: {keySeverity, keyCVSS, keyVulnID, keyPkgName, keyID},
	ByID:       {keyVulnID, keyPkgName, keyPkgVer, keyID},
	ByPackage:  {keyPkgName, keyPkgVer, keyVulnID, keyID},
	ByRisk:     {keyRisk, keySeverity, keyCVSS, keyVulnID, keyPkgName, keyID},
}

// findingCursor is the last finding of a page: every column any order
// sorts on, and the order it was made for.
type findingCursor struct {
	Order      FindingOrder `json:"o"`
	Severity   int          `json:"s"`
	CVSS       *float64     `json:"c"`
	VulnID     string       `json:"v"`
	PkgName    string       `json:"p"`
	PkgVersion string       `json:"n"`
	ID         int64        `json:"i"`
	Risk       float64      `json:"r,omitempty"`
}

// GetReport returns a report's summary (with scan status) and one page of
// its findings. Pages are keyset-paginated on the order's columns and the
// finding's id, so a cursor stays valid while other reports change and a
// walk through the pages of one report sees each finding once.
func (s *Store) GetReport(ctx context.Context, digest string, q FindingQuery) (*ReportPage, error) {
	if q.Order == "" {
		q.Order = ByRisk
	}
	keys, ok := findingOrders[q.Order]
	if !ok {
		return nil, fmt.Errorf("%w: unknown finding order %q", ErrBadCursor, q.Order)
	}
	if q.Limit < 1 {
		return nil, fmt.Errorf("finding page limit %d, want at least 1", q.Limit)
	}
	var after *findingCursor
	if q.Cursor != "" {
		c, err := decodeFindingCursor(q.Cursor, q.Order)
		if err != nil {
			return nil, err
		}
		after = &c
	}
	sum, err := s.GetSummary(ctx, digest)
	if err != nil {
		return nil, err
	}
	db := s.db.WithContext(ctx).Where("digest = ?", digest)
	if rw, rargs := findingRiskFilters("findings", q.Risk, nil, nil); len(rw) > 0 {
		db = db.Where(strings.Join(rw, " AND "), rargs...)
	}
	if aw, aargs := q.Age.filters("findings", nil, nil); len(aw) > 0 {
		db = db.Where(strings.Join(aw, " AND "), aargs...)
	}
	if q.IDs != nil {
		cond, args := q.IDs.sql()
		db = db.Where(cond, args...)
	}
	if after != nil {
		cond, args := keysetAfter(keys, after)
		db = db.Where(cond, args...)
	}
	var rows []findingRow
	if err := db.Order(orderBy(keys)).Limit(q.Limit + 1).Find(&rows).Error; err != nil {
		return nil, s.fail("get findings", err)
	}
	page := &ReportPage{Report: report.Report{Summary: *sum}}
	items := []report.Summary{page.Summary}
	if err := s.fillRunningIn(ctx, items); err != nil {
		return nil, err
	}
	page.RunningIn = items[0].RunningIn
	if len(rows) > q.Limit {
		rows = rows[:q.Limit]
		page.NextCursor = encodeFindingCursor(q.Order, rows[len(rows)-1])
	}
	page.FindingList = make([]report.Finding, len(rows))
	for i, f := range rows {
		page.FindingList[i] = f.finding()
	}
	return page, nil
}

func orderBy(keys []findingKey) string {
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k.col
		if k.desc {
			parts[i] += " DESC"
		}
		if k.nullsLast {
			parts[i] += " NULLS LAST"
		}
	}
	return strings.Join(parts, ", ")
}

// keysetAfter is the condition "the row sorts after the cursor" in the
// order of keys: after on the first key, or equal on it and after on the
// rest. Written out rather than as a row comparison, which Postgres only
// has for one direction and without NULLs.
func keysetAfter(keys []findingKey, c *findingCursor) (string, []any) {
	k := keys[0]
	v := k.value(c)
	op := ">"
	if k.desc {
		op = "<"
	}
	var after, equal string
	var afterArgs, equalArgs []any
	switch {
	case k.nullsLast && v == nil:
		after, equal = "FALSE", k.col+" IS NULL"
	case k.nullsLast:
		after, afterArgs = fmt.Sprintf("(%s %s ? OR %s IS NULL)", k.col, op, k.col), []any{v}
		equal, equalArgs = k.col+" = ?", []any{v}
	default:
		after, afterArgs = fmt.Sprintf("%s %s ?", k.col, op), []any{v}
		equal, equalArgs = k.col+" = ?", []any{v}
	}
	if len(keys) == 1 {
		return after, afterArgs
	}
	rest, restArgs := keysetAfter(keys[1:], c)
	args := append(append(afterArgs, equalArgs...), restArgs...)
	return fmt.Sprintf("(%s OR (%s AND %s))", after, equal, rest), args
}

func encodeFindingCursor(order FindingOrder, last findingRow) string {
	return marshalCursor(findingCursor{Order: order, Severity: last.Severity, CVSS: last.CVSSScore,
		VulnID: last.VulnID, PkgName: last.PkgName, PkgVersion: last.PkgVersion, ID: last.ID, Risk: last.Risk})
}

func decodeFindingCursor(s string, order FindingOrder) (findingCursor, error) {
	var c findingCursor
	if err := unmarshalCursor(s, &c); err != nil {
		return c, err
	}
	if c.Order != order {
		return c, fmt.Errorf("%w: cursor was made for sort %q, not %q", ErrBadCursor, c.Order, order)
	}
	if c.ID < 1 || c.Severity < int(report.Unknown) || c.Severity > int(report.Critical) {
		return c, fmt.Errorf("%w: bad value", ErrBadCursor)
	}
	return c, nil
}
