package store

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
)

// listSelect reads summaries with their scan status; it never touches BOMs.
const listSelect = `SELECT r.digest, r.image, r.scanned_at, r.stored_at, r.grype_version, r.db_built, r.db_schema, r.matched_at, r.cause,
 r.critical, r.high, r.medium, r.low, r.negligible, r.unknown, r.fixable, r.findings, r.findings_sha256,
 r.kev, r.max_risk,
 s.status AS s_status, s.image AS s_image, s.namespace AS s_namespace, s.scanner AS s_scanner, s.job AS s_job,
 s.reason AS s_reason, s.message AS s_message, s.attempt AS s_attempt, s.updated_at AS s_updated_at
 FROM reports r LEFT JOIN scans s ON s.digest = r.digest`

// listRow is a report's summary with its scan status (listSelect).
type listRow struct {
	SummaryColumns
	SStatus    *string
	SImage     *string
	SNamespace *string
	SScanner   *string
	SJob       *string
	SReason    *string
	SMessage   *string
	SAttempt   *int
	SUpdatedAt *time.Time
}

// summary renders l, its scan status redacted for ctx's scope.
func (l listRow) summary(ctx context.Context) report.Summary {
	sum := l.SummaryColumns.summary()
	if l.SStatus != nil {
		sum.Scan = &report.ScanStatus{
			Digest: l.Digest, Image: deref(l.SImage), Namespace: deref(l.SNamespace), Scanner: deref(l.SScanner),
			Job: deref(l.SJob), State: report.ScanState(*l.SStatus), Reason: deref(l.SReason),
			Message: deref(l.SMessage), Attempt: derefInt(l.SAttempt), UpdatedAt: l.SUpdatedAt.UTC(),
		}
		redactScan(ctx, sum.Scan)
	}
	return sum
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func derefInt(i *int) int {
	if i == nil {
		return 0
	}
	return *i
}

// ListQuery selects a page of summaries.
type ListQuery struct {
	Limit       int
	Cursor      string
	MinSeverity report.Severity // Unknown = no filter
	FixableOnly bool
	Text        string
	Sort        string // field or -field; see sortColumns
	// Namespace, and WorkloadKind with WorkloadName, keep the digests
	// running there now (empty: no filter).
	Namespace                  string
	WorkloadKind, WorkloadName string
	// Running keeps the digests some namespace runs now (true) or none
	// does (false); nil keeps both.
	Running *bool
	// Risk keeps the images with a KEV-listed finding or one at or above
	// an EPSS score.
	Risk RiskFilter
}

// ListPage is one page of summaries.
type ListPage struct {
	Items      []report.Summary
	NextCursor string
	Total      int64
}

var sortColumns = map[string]string{
	"critical": "r.critical", "high": "r.high", "medium": "r.medium", "low": "r.low",
	"scannedAt": "r.scanned_at", "image": "r.image",
	"risk": "r.max_risk", "kev": "r.kev",
}

// ValidSort reports whether s is an accepted sort key.
func ValidSort(s string) bool {
	_, ok := sortColumns[strings.TrimPrefix(s, "-")]
	return ok
}

type cursor struct {
	Sort   string `json:"s"`
	Value  any    `json:"v"`
	Digest string `json:"d"`
}

// ListReports returns one page of summaries using keyset pagination on
// (sort column, digest), so deep pages cost the same as the first.
func (s *Store) ListReports(ctx context.Context, q ListQuery) (*ListPage, error) {
	if q.Sort == "" {
		q.Sort = "-scannedAt"
	}
	field := strings.TrimPrefix(q.Sort, "-")
	col, ok := sortColumns[field]
	if !ok {
		return nil, fmt.Errorf("%w: unknown sort %q", ErrBadCursor, q.Sort)
	}
	desc := strings.HasPrefix(q.Sort, "-")
	where, args := listFilters(ctx, q)
	page := &ListPage{}
	countSQL := "SELECT count(*) FROM reports r" + whereSQL(where)
	if err := s.db.WithContext(ctx).Raw(countSQL, args...).Scan(&page.Total).Error; err != nil {
		return nil, s.fail("count reports", err)
	}
	if q.Cursor != "" {
		c, err := decodeCursor(q.Cursor, q.Sort)
		if err != nil {
			return nil, err
		}
		op := ">"
		if desc {
			op = "<"
		}
		where = append(where, fmt.Sprintf("(%s, r.digest) %s (?, ?)", col, op))
		args = append(args, c.Value, c.Digest)
	}
	dir := "ASC"
	if desc {
		dir = "DESC"
	}
	sql := fmt.Sprintf("%s%s ORDER BY %s %s, r.digest %s LIMIT %d", listSelect, whereSQL(where), col, dir, dir, q.Limit+1)
	var rows []listRow
	if err := s.db.WithContext(ctx).Raw(sql, args...).Scan(&rows).Error; err != nil {
		return nil, s.fail("list reports", err)
	}
	if len(rows) > q.Limit {
		rows = rows[:q.Limit]
		page.NextCursor = encodeCursor(q.Sort, field, rows[len(rows)-1])
	}
	page.Items = make([]report.Summary, len(rows))
	for i, r := range rows {
		page.Items[i] = r.summary(ctx)
	}
	if err := s.fillRunningIn(ctx, page.Items); err != nil {
		return nil, err
	}
	return page, nil
}

// listFilters is the WHERE of a report list (on reports r) for q's
// filters and ctx's scope: shared by ListReports and the fleet findings
// export, so that both select the same images.
func listFilters(ctx context.Context, q ListQuery) ([]string, []any) {
	var where []string
	var args []any
	if q.MinSeverity > report.Unknown {
		where = append(where, "r.max_severity >= ?")
		args = append(args, int(q.MinSeverity))
	}
	if q.FixableOnly {
		where = append(where, "r.fixable > 0")
	}
	where, args = riskFilters(q, where, args)
	if t := strings.TrimSpace(q.Text); t != "" {
		// A UNION of two index-driven sets (trigram on image, lower(vuln_id)
		// on findings) instead of an OR, which forces a scan of every report.
		where = append(where, `r.digest IN (SELECT digest FROM reports WHERE image ILIKE ? ESCAPE '\'
 UNION SELECT digest FROM findings WHERE lower(vuln_id) = lower(?))`)
		args = append(args, "%"+likeEscape(t)+"%", t)
	}
	if q.Namespace != "" || q.WorkloadKind != "" {
		cond := []string{"w.digest = r.digest"}
		var wargs []any
		if q.Namespace != "" {
			cond, wargs = append(cond, "w.namespace = ?"), append(wargs, q.Namespace)
		}
		if q.WorkloadKind != "" {
			cond, wargs = append(cond, "w.kind = ?", "w.name = ?"), append(wargs, q.WorkloadKind, q.WorkloadName)
		}
		// Filtering on a namespace outside the reader's scope must not
		// tell whether an image in scope runs there too.
		if sc, ok := ScopeOf(ctx); ok {
			cond, wargs = append(cond, "w.namespace = ANY(?::text[])"), append(wargs, textArray(sc.Namespaces))
		}
		where, args = append(where, "EXISTS (SELECT 1 FROM inventory w WHERE "+strings.Join(cond, " AND ")+")"), append(args, wargs...)
	}
	if q.Running != nil {
		not := ""
		if !*q.Running {
			not = "NOT "
		}
		where = append(where, not+"EXISTS (SELECT 1 FROM inventory w WHERE w.digest = r.digest)")
	}
	return addScope(ctx, "r.digest", where, args)
}

func whereSQL(w []string) string {
	if len(w) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(w, " AND ")
}

func likeEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

func encodeCursor(sort, field string, last listRow) string {
	var v any
	switch field {
	case "critical":
		v = last.Critical
	case "high":
		v = last.High
	case "medium":
		v = last.Medium
	case "low":
		v = last.Low
	case "scannedAt":
		v = last.ScannedAt.UTC().Format(time.RFC3339Nano)
	case "image":
		v = last.Image
	case "risk":
		v = last.MaxRisk
	case "kev":
		v = last.KEV
	}
	return marshalCursor(cursor{Sort: sort, Value: v, Digest: last.Digest})
}

func decodeCursor(s, sort string) (cursor, error) {
	var c cursor
	if err := unmarshalCursor(s, &c); err != nil {
		return c, err
	}
	if c.Sort != sort {
		return c, fmt.Errorf("%w: cursor was made for sort %q, not %q", ErrBadCursor, c.Sort, sort)
	}
	if _, err := report.ParseDigest(c.Digest); err != nil {
		return c, fmt.Errorf("%w: %w", ErrBadCursor, err)
	}
	switch v := c.Value.(type) {
	case float64:
		if strings.TrimPrefix(sort, "-") != "risk" {
			c.Value = int64(v)
		}
	case string:
		if strings.TrimPrefix(sort, "-") == "scannedAt" {
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				return c, fmt.Errorf("%w: bad time", ErrBadCursor)
			}
			c.Value = t
		}
	default:
		return c, fmt.Errorf("%w: bad value", ErrBadCursor)
	}
	return c, nil
}

// marshalCursor renders a cursor as the opaque string clients pass back:
// its JSON in unpadded base64url, safe in a query string as it is.
func marshalCursor(c any) string {
	b, _ := json.Marshal(c) // cursors hold strings and finite numbers only
	return base64.RawURLEncoding.EncodeToString(b)
}

// unmarshalCursor reads a string from marshalCursor into c. Fields it does
// not know make it fail: those are not cursors of this kind.
func unmarshalCursor(s string, c any) error {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		err = dec.Decode(c)
	}
	if err != nil {
		return fmt.Errorf("%w: not a cursor from this API", ErrBadCursor)
	}
	return nil
}

// Scanned is one answer of a batch lookup.
type Scanned struct {
	Digest    string
	ScannedAt time.Time
}

// Lookup returns, for the given (validated) digests, those that have a
// report. It sends the digests as one array parameter, so 10,000 digests
// are one index-driven query.
func (s *Store) Lookup(ctx context.Context, digests []string) ([]Scanned, error) {
	if len(digests) == 0 {
		return []Scanned{}, nil
	}
	for _, d := range digests {
		if _, err := report.ParseDigest(d); err != nil {
			return nil, err
		}
	}
	arr := "{" + strings.Join(digests, ",") + "}"
	var rows []reportRow
	where, args := addScope(ctx, "r.digest", []string{"r.digest = ANY(?::text[])"}, []any{arr})
	err := s.db.WithContext(ctx).Raw("SELECT r.digest, r.scanned_at FROM reports r"+whereSQL(where), args...).Scan(&rows).Error
	if err != nil {
		return nil, s.fail("lookup reports", err)
	}
	out := make([]Scanned, len(rows))
	for i, r := range rows {
		out[i] = Scanned{Digest: r.Digest, ScannedAt: r.ScannedAt.UTC()}
	}
	return out, nil
}
