package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
)

// findingKey is a finding's change key (report.FindingKey's fields).
type lifecycleKey struct{ id, name, version, typ string }

func keyOf(f *report.Finding) lifecycleKey {
	return lifecycleKey{f.ID, f.Package.Name, f.Package.Version, f.Package.Type}
}

// touchLifecycle records in finding_lifecycle that digest's report stored
// at holds fs, inside the report's transaction on conn: a key not seen
// before is first seen at; a resolved one is open again (keeping its
// first_seen); a KEV listing not seen before starts at; a listing that is
// gone clears kev_since; the open keys fs lacks are resolved at. It
// returns every key's lifecycle, for the findings rows.
func touchLifecycle(ctx context.Context, conn *sql.Conn, digest string, at time.Time, fs []report.Finding) (map[lifecycleKey]report.Seen, error) {
	n := len(fs)
	ids, names, versions, types := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	sevs, kevs := make([]int16, n), make([]bool, n)
	for i := range fs {
		f := &fs[i]
		ids[i], names[i], versions[i], types[i] = f.ID, f.Package.Name, f.Package.Version, f.Package.Type
		sevs[i], kevs[i] = int16(f.Severity), f.Risk.KEV
	}
	seen := make(map[lifecycleKey]report.Seen, n)
	err := conn.Raw(func(dc any) error {
		pc, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("driver connection is %T, want pgx stdlib", dc)
		}
		c := pc.Conn()
		// A key listed twice (the same package at two locations) is one
		// finding: its worst severity, KEV if either is.
		rows, err := c.Query(ctx, `INSERT INTO finding_lifecycle AS l (digest, vuln_id, pkg_name, pkg_version, pkg_type, severity, first_seen, kev_since)
SELECT $1, k.vuln_id, k.pkg_name, k.pkg_version, k.pkg_type, max(k.severity), $2, CASE WHEN bool_or(k.kev) THEN $2::timestamptz END
FROM unnest($3::text[], $4::text[], $5::text[], $6::text[], $7::int2[], $8::bool[]) AS k(vuln_id, pkg_name, pkg_version, pkg_type, severity, kev)
GROUP BY k.vuln_id, k.pkg_name, k.pkg_version, k.pkg_type
ON CONFLICT (digest, vuln_id, pkg_name, pkg_version, pkg_type) DO UPDATE SET resolved_at = NULL, severity = EXCLUDED.severity,
 kev_since = CASE WHEN EXCLUDED.kev_since IS NULL THEN NULL ELSE coalesce(l.kev_since, EXCLUDED.kev_since) END
RETURNING vuln_id, pkg_name, pkg_version, pkg_type, first_seen, kev_since`, digest, at, ids, names, versions, types, sevs, kevs)
		if err != nil {
			return err
		}
		var k lifecycleKey
		var first time.Time
		var kev *time.Time
		if _, err := pgx.ForEachRow(rows, []any{&k.id, &k.name, &k.version, &k.typ, &first, &kev}, func() error {
			s := report.Seen{FirstSeen: first.UTC()}
			if kev != nil {
				s.KEVSince = kev.UTC()
			}
			seen[k] = s
			return nil
		}); err != nil {
			return err
		}
		// NOT IN, not NOT EXISTS: the planner hashes a NOT IN subquery
		// (the keys are NOT NULL, so the two agree), while it guesses 10
		// rows for unnest of a parameter and ran NOT EXISTS as a nested
		// loop, every open key against every new one: 9,584 findings took
		// over 15 s (the statement timeout).
		_, err = c.Exec(ctx, `UPDATE finding_lifecycle l SET resolved_at = $2
WHERE l.digest = $1 AND l.resolved_at IS NULL AND (l.vuln_id, l.pkg_name, l.pkg_version, l.pkg_type) NOT IN (
 SELECT k.vuln_id, k.pkg_name, k.pkg_version, k.pkg_type FROM unnest($3::text[], $4::text[], $5::text[], $6::text[]) AS k(vuln_id, pkg_name, pkg_version, pkg_type))`,
			digest, at, ids, names, versions, types)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("finding lifecycle: %w", err)
	}
	return seen, nil
}

// startLifecycle is touchLifecycle for a digest that has no lifecycle rows
// (its report was just inserted, and the rows go with the report): every
// key is first seen at, and KEV since at where any of its findings is
// KEV-listed, so the rows are known without asking Postgres and go in with
// COPY, without touchLifecycle's conflict handling, RETURNING and resolve
// pass (~3 ms of Postgres per 129-finding report, docs/benchmarks.md).
func startLifecycle(ctx context.Context, conn *sql.Conn, digest string, at time.Time, fs []report.Finding) (map[lifecycleKey]report.Seen, error) {
	at = at.UTC()
	seen := make(map[lifecycleKey]report.Seen, len(fs))
	severity := make(map[lifecycleKey]report.Severity, len(fs))
	keys := make([]lifecycleKey, 0, len(fs))
	for i := range fs {
		f := &fs[i]
		k := keyOf(f)
		s, ok := seen[k]
		if !ok {
			keys = append(keys, k)
			s.FirstSeen = at
		}
		// A key listed twice (the same package at two locations) is one
		// finding: its worst severity, KEV if either is.
		if f.Risk.KEV {
			s.KEVSince = at
		}
		seen[k] = s
		severity[k] = max(severity[k], f.Severity)
	}
	if len(keys) == 0 {
		return seen, nil
	}
	err := copyIn(ctx, conn, "finding_lifecycle", lifecycleColumns, len(keys), func(i int) ([]any, error) {
		k := keys[i]
		var kev *time.Time
		if s := seen[k]; !s.KEVSince.IsZero() {
			kev = &s.KEVSince
		}
		return []any{digest, k.id, k.name, k.version, k.typ, int16(severity[k]), at, kev}, nil
	})
	if err != nil {
		return nil, fmt.Errorf("finding lifecycle: %w", err)
	}
	return seen, nil
}

var lifecycleColumns = []string{"digest", "vuln_id", "pkg_name", "pkg_version", "pkg_type", "severity", "first_seen", "kev_since"}

// LifecycleEntry is one finding key's lifecycle in a digest.
type LifecycleEntry struct {
	report.FindingKey
	Severity   report.Severity
	Seen       report.Seen
	ResolvedAt time.Time // zero while open
}

// FindingLifecycle lists every finding key digest's reports have held,
// open and resolved, by key (within ctx's scope: ErrNotFound outside).
func (s *Store) FindingLifecycle(ctx context.Context, digest string) ([]LifecycleEntry, error) {
	if ok, err := s.Visible(ctx, digest); err != nil || !ok {
		if err == nil {
			err = ErrNotFound
		}
		return nil, err
	}
	var rows []struct {
		VulnID, PkgName, PkgVersion, PkgType string
		Severity                             int
		FirstSeen                            time.Time
		KEVSince                             *time.Time `gorm:"column:kev_since"`
		ResolvedAt                           *time.Time
	}
	err := s.db.WithContext(ctx).Raw(`SELECT vuln_id, pkg_name, pkg_version, pkg_type, severity, first_seen, kev_since, resolved_at
 FROM finding_lifecycle WHERE digest = ? ORDER BY vuln_id, pkg_name, pkg_version, pkg_type`, digest).Scan(&rows).Error
	if err != nil {
		return nil, s.fail("finding lifecycle", err)
	}
	out := make([]LifecycleEntry, len(rows))
	for i, r := range rows {
		out[i] = LifecycleEntry{FindingKey: report.FindingKey{ID: r.VulnID, Name: r.PkgName, Version: r.PkgVersion, Type: r.PkgType},
			Severity: report.Severity(r.Severity), Seen: report.Seen{FirstSeen: r.FirstSeen.UTC(), KEVSince: utc(r.KEVSince)},
			ResolvedAt: utc(r.ResolvedAt)}
	}
	return out, nil
}
