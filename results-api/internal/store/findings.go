package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/crowsnest-dev/crowsnest/api/finding"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
)

var findingColumns = []string{"digest", "vuln_id", "source", "severity", "cvss_score", "cvss_vector",
	"pkg_name", "pkg_version", "pkg_type", "purl", "fixed_in", "fixable", "description", "url",
	"epss", "kev", "risk", "first_seen", "kev_since"}

// copyFindings writes a report's findings with COPY … FROM STDIN (binary)
// on conn, the connection that holds the open transaction, so the rows
// commit or roll back with it. COPY replaced an INSERT … SELECT
// unnest(14 arrays): it needs no per-column arrays or per-finding
// json.Marshal in Go (the store's Go CPU per 1 MB report fell from 12.5
// to 5 ms); the Postgres side costs about the same (docs/benchmarks.md).
func copyFindings(ctx context.Context, conn *sql.Conn, digest string, fs []report.Finding, seen map[lifecycleKey]report.Seen) error {
	if len(fs) == 0 {
		return nil
	}
	err := copyIn(ctx, conn, "findings", findingColumns, len(fs), func(i int) ([]any, error) {
		f := &fs[i]
		fixed := f.FixedIn
		if fixed == nil {
			fixed = []string{} // jsonb '[]', never 'null'
		}
		sn, ok := seen[keyOf(f)]
		if !ok {
			return nil, fmt.Errorf("finding %s of %s has no lifecycle", f.ID, f.Package.Name)
		}
		var kevSince *time.Time
		if !sn.KEVSince.IsZero() {
			kevSince = &sn.KEVSince
		}
		return []any{digest, f.ID, f.Source, int16(f.Severity), f.CVSSScore, f.CVSSVector,
			f.Package.Name, f.Package.Version, f.Package.Type, f.Package.PURL, fixed, f.Fixable(),
			f.Description, f.URL, f.Risk.EPSS, f.Risk.KEV, f.Risk.Score, sn.FirstSeen, kevSince}, nil
	})
	return err
}

// copyIn writes n rows (row(i) gives the i-th) into table's columns with
// COPY … FROM STDIN (binary) on conn, the connection that holds the open
// transaction, so the rows commit or roll back with it, and fails unless
// all n were copied. gorm has no COPY: this goes through pgx on gorm's
// own connection.
func copyIn(ctx context.Context, conn *sql.Conn, table string, columns []string, n int, row func(int) ([]any, error)) error {
	return withPgx(conn, func(c *pgx.Conn) error {
		got, err := c.CopyFrom(ctx, pgx.Identifier{table}, columns, pgx.CopyFromSlice(n, row))
		if err == nil && got != int64(n) {
			err = fmt.Errorf("copied %d of %d rows into %s", got, n, table)
		}
		return err
	})
}

// withPgx runs f with the pgx connection under conn, gorm's pinned
// connection (and so inside its transaction, if one is open), for what
// gorm cannot do or would copy once more: COPY, RETURNING into Go values,
// arrays as parameters.
func withPgx(conn *sql.Conn, f func(*pgx.Conn) error) error {
	return conn.Raw(func(dc any) error {
		pc, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("driver connection is %T, want pgx stdlib", dc)
		}
		return f(pc.Conn())
	})
}

// fingerprint is the contract's finding.Fingerprint of fs. Two reports of a
// digest with the same fingerprint have the same findings rows, so a
// replacement that keeps it keeps the rows (and their ids) instead of
// deleting and copying them again; the matcher compares it to tell an
// unchanged re-match (ListReports returns it).
func fingerprint(fs []report.Finding) []byte {
	return finding.Fingerprint(report.ToContract(fs))
}

// storedFindings reads digest's findings rows (for report.Diff) and the
// lifecycle of their keys (the open keys: first sighting, KEV listing and
// worst severity of each, which live in those rows) on conn, inside the
// transaction that replaces them.
func storedFindings(ctx context.Context, conn *sql.Conn, digest string) ([]report.ChangedFinding, map[lifecycleKey]openKey, error) {
	var out []report.ChangedFinding
	open := map[lifecycleKey]openKey{}
	err := withPgx(conn, func(c *pgx.Conn) error {
		rows, err := c.Query(ctx, `SELECT vuln_id, severity, pkg_name, pkg_version, pkg_type, fixed_in, kev, epss, risk, first_seen, kev_since
 FROM findings WHERE digest = $1`, digest)
		if err != nil {
			return err
		}
		var f report.ChangedFinding
		var sev int16
		var first time.Time
		var kevSince *time.Time
		_, err = pgx.ForEachRow(rows, []any{&f.ID, &sev, &f.Name, &f.Version, &f.Type, &f.FixedIn,
			&f.Risk.KEV, &f.Risk.EPSS, &f.Risk.Score, &first, &kevSince}, func() error {
			f.Severity = report.Severity(sev)
			out = append(out, f)
			// A key listed twice (the same package at two locations) is
			// one finding: its rows carry the same sightings.
			k := lifecycleKey{f.ID, f.Name, f.Version, f.Type}
			o, seen := open[k]
			if !seen || first.Before(o.FirstSeen) {
				o.FirstSeen = first.UTC()
			}
			if kevSince != nil && (o.KEVSince.IsZero() || kevSince.Before(o.KEVSince)) {
				o.KEVSince = kevSince.UTC()
			}
			o.severity = max(o.severity, f.Severity)
			open[k] = o
			f.FixedIn, f.Risk.EPSS = nil, nil
			return nil
		})
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("read findings: %w", err)
	}
	return out, open, nil
}
