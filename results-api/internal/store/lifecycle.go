package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
)

// findingKey is a finding's change key (report.FindingKey's fields).
type lifecycleKey struct{ id, name, version, typ string }

func keyOf(f *report.Finding) lifecycleKey {
	return lifecycleKey{f.ID, f.Package.Name, f.Package.Version, f.Package.Type}
}

// A digest's finding keys have their lifecycle in one of two places, never
// both. A key its current report holds (open) has it in that report's
// findings rows: first_seen, kev_since, and its severity, the worst of its
// rows. A key an earlier report held and the current one does not
// (resolved) has a row in finding_lifecycle with resolved_at; a report that
// holds it again takes that row out, and the key is open again with its
// first sighting kept. So a digest's first report writes no lifecycle rows
// at all (startLifecycle), and a replacement writes only the keys that
// resolve or come back (touchLifecycle).

// openKey is an open key's lifecycle, read from its findings rows.
type openKey struct {
	report.Seen
	severity report.Severity
}

// startLifecycle is the lifecycle of the findings of a digest's first
// report, stored at: every key first seen at, and KEV since at where any
// of its findings is KEV-listed. It writes nothing: the rows go with the
// findings.
func startLifecycle(at time.Time, fs []report.Finding) map[lifecycleKey]report.Seen {
	at = at.UTC()
	seen := make(map[lifecycleKey]report.Seen, len(fs))
	for i := range fs {
		f := &fs[i]
		k := keyOf(f)
		s, ok := seen[k]
		if !ok {
			s.FirstSeen = at
		}
		// A key listed twice (the same package at two locations) is one
		// finding: KEV if either is.
		if f.Risk.KEV {
			s.KEVSince = at
		}
		seen[k] = s
	}
	return seen
}

// touchLifecycle records, inside the transaction on conn that replaces
// digest's findings (open: the lifecycle of the keys its stored report
// held, from storedFindings) with fs stored at, what the replacement does
// to each key: one fs holds that was open stays open with its first
// sighting; one that was resolved is open again with its first sighting
// (its finding_lifecycle row taken out); any other is first seen at. A KEV
// listing not seen before starts at, one that is gone clears kev_since.
// The open keys fs lacks are resolved at (a finding_lifecycle row each,
// with their last severity and sightings). It returns every key's
// lifecycle, for the findings rows.
func touchLifecycle(ctx context.Context, conn *sql.Conn, digest string, at time.Time, open map[lifecycleKey]openKey, fs []report.Finding) (map[lifecycleKey]report.Seen, error) {
	at = at.UTC()
	seen := make(map[lifecycleKey]report.Seen, len(fs))
	kev := make(map[lifecycleKey]bool, len(fs))
	var back []lifecycleKey // keys neither open nor known to be new: maybe resolved
	for i := range fs {
		k := keyOf(&fs[i])
		if _, ok := seen[k]; !ok {
			if o, ok := open[k]; ok {
				seen[k] = o.Seen
			} else {
				seen[k] = report.Seen{FirstSeen: at}
				back = append(back, k)
			}
		}
		kev[k] = kev[k] || fs[i].Risk.KEV
	}
	var resolved []lifecycleKey
	for k := range open {
		if _, ok := seen[k]; !ok {
			resolved = append(resolved, k)
		}
	}
	var err error
	if len(back) > 0 {
		err = withPgx(conn, func(c *pgx.Conn) error {
			return reopen(ctx, c, digest, back, seen)
		})
	}
	if err != nil {
		return nil, fmt.Errorf("finding lifecycle: %w", err)
	}
	for k, s := range seen {
		switch {
		case !kev[k]:
			s.KEVSince = time.Time{}
		case s.KEVSince.IsZero():
			s.KEVSince = at
		}
		seen[k] = s
	}
	if len(resolved) == 0 {
		return seen, nil
	}
	err = copyIn(ctx, conn, "finding_lifecycle", lifecycleColumns, len(resolved), func(i int) ([]any, error) {
		k := resolved[i]
		o := open[k]
		var kevSince *time.Time
		if !o.KEVSince.IsZero() {
			kevSince = &o.KEVSince
		}
		return []any{digest, k.id, k.name, k.version, k.typ, int16(o.severity), o.FirstSeen, kevSince, at}, nil
	})
	if err != nil {
		return nil, fmt.Errorf("finding lifecycle: %w", err)
	}
	return seen, nil
}

// keyArrays splits keys into one array per column, for unnest.
func keyArrays(keys []lifecycleKey) (ids, names, versions, types []string) {
	n := len(keys)
	ids, names, versions, types = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	for i, k := range keys {
		ids[i], names[i], versions[i], types[i] = k.id, k.name, k.version, k.typ
	}
	return ids, names, versions, types
}

var lifecycleColumns = []string{"digest", "vuln_id", "pkg_name", "pkg_version", "pkg_type", "severity", "first_seen", "kev_since", "resolved_at"}

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
	// The open keys from the findings rows, the resolved ones from
	// finding_lifecycle (a key is in one of the two).
	err := s.db.WithContext(ctx).Raw(`SELECT vuln_id, pkg_name, pkg_version, pkg_type, max(severity) AS severity, min(first_seen) AS first_seen,
 min(kev_since) AS kev_since, NULL::timestamptz AS resolved_at
 FROM findings WHERE digest = @d GROUP BY vuln_id, pkg_name, pkg_version, pkg_type
 UNION ALL SELECT vuln_id, pkg_name, pkg_version, pkg_type, severity, first_seen, kev_since, resolved_at
 FROM finding_lifecycle WHERE digest = @d ORDER BY vuln_id, pkg_name, pkg_version, pkg_type`, sql.Named("d", digest)).Scan(&rows).Error
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

// reopen deletes the resolved lifecycle rows of the keys a report holds
// again and puts their first sighting and KEV listing into seen: a key that
// comes back keeps its lifecycle.
func reopen(ctx context.Context, c *pgx.Conn, digest string, back []lifecycleKey, seen map[lifecycleKey]report.Seen) error {
	ids, names, versions, types := keyArrays(back)
	rows, err := c.Query(ctx, `DELETE FROM finding_lifecycle l USING unnest($2::text[], $3::text[], $4::text[], $5::text[]) AS k(vuln_id, pkg_name, pkg_version, pkg_type)
WHERE l.digest = $1 AND l.vuln_id = k.vuln_id AND l.pkg_name = k.pkg_name AND l.pkg_version = k.pkg_version AND l.pkg_type = k.pkg_type
RETURNING l.vuln_id, l.pkg_name, l.pkg_version, l.pkg_type, l.first_seen, l.kev_since`, digest, ids, names, versions, types)
	if err != nil {
		return err
	}
	var k lifecycleKey
	var first time.Time
	var kevSince *time.Time
	_, err = pgx.ForEachRow(rows, []any{&k.id, &k.name, &k.version, &k.typ, &first, &kevSince}, func() error {
		seen[k] = report.Seen{FirstSeen: first.UTC(), KEVSince: utc(kevSince)}
		return nil
	})
	return err
}
