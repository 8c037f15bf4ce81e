package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// ServedDB is the Grype vulnerability DB the matcher serves, as its
// crowsnest.vulndb.updated event announced it.
type ServedDB struct {
	Built        time.Time
	Schema       string
	Checksum     string
	Source       string // the listing URL it was fetched from, or "import"
	GrypeVersion string // the matcher's Grype, when the event names it
	EventID      string
	AnnouncedAt  time.Time // the event's time
}

// DBBuildCount is how many reports were last matched against one DB build
// (Built and Schema as stored: "" when the report named none).
type DBBuildCount struct {
	Built   string
	Schema  string
	Reports int
}

// VulnDBStatus is what GET /api/v1/vulndb shows: the served DB (nil until
// results-api has seen an announcement) and the reports in the caller's
// scope counted by the DB build they were matched against: the reports
// with an unknown DB first, then the newest build first.
type VulnDBStatus struct {
	Served *ServedDB
	Builds []DBBuildCount
}

// MaxDBBuilds bounds the builds VulnDBStatus lists. The matcher re-matches
// every report against each new DB, so only reports it could not re-match
// (or a stopped matcher) keep older builds; the oldest beyond the bound
// are left out.
const MaxDBBuilds = 100

type servedRow struct {
	ID           int16 `gorm:"primaryKey"`
	Built        time.Time
	Schema       string
	Checksum     string
	Source       string
	GrypeVersion string
	EventID      string
	AnnouncedAt  time.Time
}

func (servedRow) TableName() string { return "vulndb_served" }

// RecordServedDB stores db as the served DB unless a newer announcement is
// stored already (every replica records each event, and JetStream may
// deliver an old one late). It reports whether db was recorded.
func (s *Store) RecordServedDB(ctx context.Context, db ServedDB) (bool, error) {
	res := s.db.WithContext(ctx).Exec(`INSERT INTO vulndb_served (id, built, schema, checksum, source, grype_version, event_id, announced_at)
 VALUES (1, ?, ?, ?, ?, ?, ?, ?)
 ON CONFLICT (id) DO UPDATE SET built = excluded.built, schema = excluded.schema, checksum = excluded.checksum,
  source = excluded.source, grype_version = excluded.grype_version, event_id = excluded.event_id, announced_at = excluded.announced_at
 WHERE vulndb_served.announced_at < excluded.announced_at
  OR (vulndb_served.announced_at = excluded.announced_at AND vulndb_served.event_id < excluded.event_id)`,
		db.Built.UTC(), db.Schema, db.Checksum, db.Source, db.GrypeVersion, db.EventID, db.AnnouncedAt.UTC())
	if res.Error != nil {
		return false, s.fail("record served vulndb", res.Error)
	}
	return res.RowsAffected == 1, nil
}

// VulnDBStatus returns the served DB and the reports visible in ctx's
// scope counted by DB build.
func (s *Store) VulnDBStatus(ctx context.Context) (*VulnDBStatus, error) {
	db := s.db.WithContext(ctx)
	st := &VulnDBStatus{Builds: []DBBuildCount{}}
	var row servedRow
	switch err := db.Take(&row).Error; {
	case err == nil:
		st.Served = &ServedDB{Built: row.Built.UTC(), Schema: row.Schema, Checksum: row.Checksum, Source: row.Source,
			GrypeVersion: row.GrypeVersion, EventID: row.EventID, AnnouncedAt: row.AnnouncedAt.UTC()}
	case !errors.Is(err, gorm.ErrRecordNotFound):
		return nil, s.fail("served vulndb", err)
	}
	err := db.Raw(`SELECT r.db_built AS built, r.db_schema AS schema, count(*) AS reports FROM reports r`+cond(ctx, "r.digest")+`
 GROUP BY r.db_built, r.db_schema ORDER BY r.db_built <> '', r.db_built DESC, r.db_schema DESC LIMIT ?`,
		append(args(ctx), MaxDBBuilds)...).Scan(&st.Builds).Error
	if err != nil {
		return nil, s.fail("reports by vulndb", err)
	}
	return st, nil
}

// String names the DB for logs.
func (d ServedDB) String() string {
	return fmt.Sprintf("%s (%s)", d.Built.Format(time.RFC3339), d.Schema)
}
