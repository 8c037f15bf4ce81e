package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
)

// Change kinds of report_change_findings.
const (
	kindNew      = "new"
	kindResolved = "resolved"
	kindKEVAdded = "kev_added"
)

var changeFindingColumns = []string{"change_id", "kind", "vuln_id", "severity", "pkg_name", "pkg_version", "pkg_type", "fixed_in",
	"kev", "epss", "risk"}

// changeRow is a row of report_changes.
type changeRow struct {
	ID                 int64
	Digest             string
	Image              string
	Cause              string
	DBBuilt            string `gorm:"column:db_built"`
	DBSchema           string `gorm:"column:db_schema"`
	ChangedAt          time.Time
	Baseline           bool
	NewCritical        int
	NewHigh            int
	NewMedium          int
	NewLow             int
	NewNegligible      int
	NewUnknown         int
	ResolvedCritical   int
	ResolvedHigh       int
	ResolvedMedium     int
	ResolvedLow        int
	ResolvedNegligible int
	ResolvedUnknown    int
	KEVAdded           int `gorm:"column:kev_added"`
	MaxSeverity        int
}

func (changeRow) TableName() string { return "report_changes" }

func newChangeRow(c *report.Change) changeRow {
	n, r := c.NewCounts, c.ResolvedCounts
	maxSev := int(c.Max())
	if n == (report.Counts{}) && r == (report.Counts{}) && len(c.KEVAdded) == 0 {
		maxSev = -1 // no finding at all: below every minSeverity
	}
	return changeRow{Digest: c.Digest, Image: c.Image, Cause: string(c.Cause), DBBuilt: c.DBBuilt, DBSchema: c.DBSchema,
		ChangedAt: c.ChangedAt, Baseline: c.Baseline,
		NewCritical: n.Critical, NewHigh: n.High, NewMedium: n.Medium, NewLow: n.Low, NewNegligible: n.Negligible, NewUnknown: n.Unknown,
		ResolvedCritical: r.Critical, ResolvedHigh: r.High, ResolvedMedium: r.Medium, ResolvedLow: r.Low,
		ResolvedNegligible: r.Negligible, ResolvedUnknown: r.Unknown, KEVAdded: c.KEVAddedCount, MaxSeverity: maxSev}
}

func (c changeRow) change() report.Change {
	return report.Change{ID: c.ID, Digest: c.Digest, Image: c.Image, Cause: report.Cause(c.Cause), DBBuilt: c.DBBuilt,
		DBSchema: c.DBSchema, ChangedAt: c.ChangedAt.UTC(), Baseline: c.Baseline,
		NewCounts: report.Counts{Critical: c.NewCritical, High: c.NewHigh, Medium: c.NewMedium, Low: c.NewLow,
			Negligible: c.NewNegligible, Unknown: c.NewUnknown},
		ResolvedCounts: report.Counts{Critical: c.ResolvedCritical, High: c.ResolvedHigh, Medium: c.ResolvedMedium,
			Low: c.ResolvedLow, Negligible: c.ResolvedNegligible, Unknown: c.ResolvedUnknown},
		KEVAddedCount: c.KEVAdded}
}

// recordChange stores ch, the change the report summarised by sum made,
// inside the report's transaction, and hands it to res with its id.
func recordChange(ctx context.Context, tx *gorm.DB, conn *sql.Conn, sum *report.Summary, ch *report.Change, res *PutResult) error {
	ch.Digest, ch.Image, ch.Cause = sum.Digest, sum.Image, sum.Cause
	ch.DBBuilt, ch.DBSchema, ch.ChangedAt = sum.DBBuilt, sum.DBSchema, sum.StoredAt
	row := newChangeRow(ch)
	if err := tx.Create(&row).Error; err != nil {
		return fmt.Errorf("record change: %w", err)
	}
	ch.ID = row.ID
	if n := len(ch.New) + len(ch.Resolved) + len(ch.KEVAdded); n > 0 {
		if err := copyChangeFindings(ctx, conn, ch); err != nil {
			return fmt.Errorf("record changed findings: %w", err)
		}
	}
	res.Change = ch
	return nil
}

// copyChangeFindings writes a change's findings with COPY, on the
// connection of the open transaction (as copyFindings).
func copyChangeFindings(ctx context.Context, conn *sql.Conn, ch *report.Change) error {
	n := len(ch.New) + len(ch.Resolved) + len(ch.KEVAdded)
	return copyIn(ctx, conn, "report_change_findings", changeFindingColumns, n, func(i int) ([]any, error) {
		kind, f := kindNew, ch.New
		if i >= len(ch.New) {
			kind, f, i = kindResolved, ch.Resolved, i-len(ch.New)
			if i >= len(ch.Resolved) {
				kind, f, i = kindKEVAdded, ch.KEVAdded, i-len(ch.Resolved)
			}
		}
		c := &f[i]
		fixed := c.FixedIn
		if fixed == nil {
			fixed = []string{}
		}
		return []any{ch.ID, kind, c.ID, int16(c.Severity), c.Name, c.Version, c.Type, fixed, c.Risk.KEV, c.Risk.EPSS, c.Risk.Score}, nil
	})
}

// announceChange writes a change's findings.changed event into the outbox.
func (s *Store) announceChange(tx *gorm.DB, ch report.Change) error {
	ca, ok := s.announcer.(ChangeAnnouncer)
	if !ok {
		return nil
	}
	ev, err := ca.FindingsChanged(ch, func() ([]string, error) {
		var out []string
		err := tx.Raw(`SELECT DISTINCT namespace FROM inventory WHERE digest = ? ORDER BY namespace`, ch.Digest).Scan(&out).Error
		return out, err
	})
	if err != nil {
		return fmt.Errorf("build event: %w", err)
	}
	return insertOutbox(tx, ev)
}

// VulnDBRecord is a DB match that left a report's findings as they are.
type VulnDBRecord struct {
	Built     string    // the DB's build time, RFC 3339
	Schema    string    // the DB's schema version
	MatchedAt time.Time // when the report was matched against it
}

// RecordVulnDB records that digest's report was matched against another DB
// without a change: it sets the report's DB build, schema and match time
// and touches nothing else (no findings, no BOM, no event). ErrNotFound
// when the digest has no report.
func (s *Store) RecordVulnDB(ctx context.Context, digest string, rec VulnDBRecord) error {
	q := s.db.WithContext(ctx).Model(&reportRow{}).Where("digest = ?", digest).
		Updates(map[string]any{"db_built": rec.Built, "db_schema": rec.Schema, "matched_at": rec.MatchedAt})
	if q.Error != nil {
		return s.fail("record vulndb", q.Error)
	}
	if q.RowsAffected == 0 {
		return ErrNotFound
	}
	return nil
}

// ChangeQuery selects a page of changes, newest first.
type ChangeQuery struct {
	Digest string    // one digest's history; empty for every digest
	Since  time.Time // changes at or after it; zero for all
	// MinSeverity, when set, keeps the changes with a new, resolved or
	// KEV-added finding at or above it, and lists only such findings.
	MinSeverity *report.Severity
	Cause       report.Cause // empty for every cause
	Limit       int          // changes per page, at least 1
	Cursor      string       // a previous page's NextCursor of the same query
	// FindingsLimit caps the new and the resolved findings listed per
	// change (Change.Truncated says when there were more).
	FindingsLimit int
}

// ChangePage is one page of changes.
type ChangePage struct {
	Items      []report.Change
	NextCursor string // empty on the last page
}

// changeCursor is the last change of a page.
type changeCursor struct {
	At time.Time `json:"t"`
	ID int64     `json:"i"`
}

// ListChanges returns one page of changes, newest first (changed_at, then
// id, both descending: keyset pagination on the report_changes indexes),
// each with up to FindingsLimit of its new, of its resolved and of its
// KEV-added findings, worst first (KEV-listed first within a severity).
func (s *Store) ListChanges(ctx context.Context, q ChangeQuery) (*ChangePage, error) {
	var where []string
	var args []any
	if q.Digest != "" {
		where, args = append(where, "digest = ?"), append(args, q.Digest)
	}
	if !q.Since.IsZero() {
		where, args = append(where, "changed_at >= ?"), append(args, q.Since)
	}
	if q.MinSeverity != nil {
		where, args = append(where, "max_severity >= ?"), append(args, int(*q.MinSeverity))
	}
	if q.Cause != "" {
		where, args = append(where, "cause = ?"), append(args, string(q.Cause))
	}
	where, args = addScope(ctx, "report_changes.digest", where, args)
	if q.Cursor != "" {
		var c changeCursor
		if err := unmarshalCursor(q.Cursor, &c); err != nil {
			return nil, err
		}
		where, args = append(where, "(changed_at, id) < (?, ?)"), append(args, c.At, c.ID)
	}
	var rows []changeRow
	db := s.db.WithContext(ctx)
	sqlText := "SELECT * FROM report_changes" + whereSQL(where) + fmt.Sprintf(" ORDER BY changed_at DESC, id DESC LIMIT %d", q.Limit+1)
	if err := db.Raw(sqlText, args...).Scan(&rows).Error; err != nil {
		return nil, s.fail("list changes", err)
	}
	page := &ChangePage{Items: make([]report.Change, 0, min(len(rows), q.Limit))}
	if len(rows) > q.Limit {
		rows = rows[:q.Limit]
		last := rows[len(rows)-1]
		page.NextCursor = marshalCursor(changeCursor{At: last.ChangedAt.UTC(), ID: last.ID})
	}
	idx := make(map[int64]int, len(rows))
	ids := make([]int64, 0, len(rows))
	for _, r := range rows {
		idx[r.ID] = len(page.Items)
		ids = append(ids, r.ID)
		page.Items = append(page.Items, r.change())
	}
	if len(ids) == 0 {
		return page, nil
	}
	minSev := -1
	if q.MinSeverity != nil {
		minSev = int(*q.MinSeverity)
	}
	var fs []struct {
		ChangeID                                   int64
		Kind, VulnID, PkgName, PkgVersion, PkgType string
		Severity                                   int
		FixedIn                                    string
		KEV                                        bool
		EPSS                                       *float64
		Risk                                       float64
	}
	// One more than the cap per kind tells whether the list was cut.
	err := db.Raw(`SELECT change_id, kind, vuln_id, severity, pkg_name, pkg_version, pkg_type, fixed_in::text AS fixed_in, kev, epss, risk FROM (
 SELECT f.*, row_number() OVER (PARTITION BY change_id, kind ORDER BY severity DESC, kev DESC, vuln_id, pkg_name, pkg_version, pkg_type) AS n
 FROM report_change_findings f WHERE change_id IN ? AND severity >= ?) x
WHERE n <= ? ORDER BY change_id, kind, n`, ids, minSev, q.FindingsLimit+1).Scan(&fs).Error
	if err != nil {
		return nil, s.fail("list changed findings", err)
	}
	counts := map[[2]any]int{}
	for _, f := range fs {
		ch := &page.Items[idx[f.ChangeID]]
		k := [2]any{f.ChangeID, f.Kind}
		if counts[k]++; counts[k] > q.FindingsLimit {
			ch.Truncated = true
			continue
		}
		cf := report.ChangedFinding{FindingKey: report.FindingKey{ID: f.VulnID, Name: f.PkgName, Version: f.PkgVersion, Type: f.PkgType},
			Severity: report.Severity(f.Severity), Risk: report.Risk{KEV: f.KEV, EPSS: f.EPSS, Score: f.Risk}}
		if err := json.Unmarshal([]byte(f.FixedIn), &cf.FixedIn); err != nil {
			return nil, fmt.Errorf("changed finding of change %d: fixed_in: %w", f.ChangeID, err)
		}
		switch f.Kind {
		case kindNew:
			ch.New = append(ch.New, cf)
		case kindKEVAdded:
			ch.KEVAdded = append(ch.KEVAdded, cf)
		default:
			ch.Resolved = append(ch.Resolved, cf)
		}
	}
	return page, nil
}
