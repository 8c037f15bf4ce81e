package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
)

// ParseFindings extracts a stored BOM's findings, as ingest did when it was
// uploaded (ingest.Parse): BackfillRisk takes it as a function so that the
// store needs no BOM parser of its own.
type ParseFindings func(digest string, raw []byte) ([]report.Finding, error)

// BackfillRisk fills the risk columns (EPSS, KEV, risk score) of reports
// stored before findings had them (migration 00007): per report it reads
// the stored BOM, parses it again and updates the findings rows in place,
// then the report's KEV count, highest risk and fingerprint. Reports are
// taken batch at a time until none is left or ctx ends; it returns how many
// it filled. A report written meanwhile (another BOM) is already parsed and
// is skipped; replicas running it at once fill each report once (row lock).
func (s *Store) BackfillRisk(ctx context.Context, parse ParseFindings, batch int) (int, error) {
	if batch <= 0 {
		batch = 100
	}
	filled := 0
	var after string
	for {
		var digests []string
		err := s.db.WithContext(ctx).Model(&reportRow{}).Where("NOT risk_parsed AND digest > ?", after).
			Order("digest").Limit(batch).Pluck("digest", &digests).Error
		if err != nil {
			return filled, s.fail("backfill risk", err)
		}
		if len(digests) == 0 {
			return filled, nil
		}
		for _, d := range digests {
			ok, err := s.backfillOne(ctx, parse, d)
			if err != nil {
				return filled, s.fail("backfill risk", fmt.Errorf("report %s: %w", d, err))
			}
			if ok {
				filled++
			}
		}
		after = digests[len(digests)-1]
	}
}

func (s *Store) backfillOne(ctx context.Context, parse ParseFindings, digest string) (bool, error) {
	br, err := s.OpenBOM(ctx, digest)
	if errors.Is(err, ErrNotFound) {
		return false, nil // deleted meanwhile
	}
	if err != nil {
		return false, err
	}
	raw, err := io.ReadAll(br)
	_ = br.Close()
	if err != nil {
		return false, err
	}
	fs, err := parse(digest, raw)
	if err != nil {
		return false, fmt.Errorf("parse stored BOM: %w", err)
	}
	hash := sha256.Sum256(raw)
	var ids, names, versions, purls []string
	var epss []*float64
	var kev []bool
	var risk []float64
	sum := report.Summary{}
	for _, f := range fs {
		if f.Risk.KEV {
			sum.KEV++
		}
		sum.MaxRisk = max(sum.MaxRisk, f.Risk.Score)
		if e := f.Risk.EPSS; e != nil && (sum.MaxEPSS == nil || *e > *sum.MaxEPSS) {
			sum.MaxEPSS = e
		}
		if f.Risk == (report.Risk{}) {
			continue
		}
		ids, names, versions, purls = append(ids, f.ID), append(names, f.Package.Name), append(versions, f.Package.Version), append(purls, f.Package.PURL)
		epss, kev, risk = append(epss, f.Risk.EPSS), append(kev, f.Risk.KEV), append(risk, f.Risk.Score)
	}
	done := false
	// One pinned connection carries gorm's transaction and the pgx UPDATE
	// (gorm would expand the array parameters into lists).
	err = s.db.WithContext(ctx).Connection(func(db *gorm.DB) error {
		conn, ok := db.Statement.ConnPool.(*sql.Conn)
		if !ok {
			return fmt.Errorf("connection pool is %T, want *sql.Conn", db.Statement.ConnPool)
		}
		return db.Transaction(func(tx *gorm.DB) error {
			var cur reportRow
			if err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Where("digest = ?", digest).Limit(1).Find(&cur).Error; err != nil {
				return err
			}
			if cur.Digest == "" || cur.RiskParsed || !bytes.Equal(cur.BOMSHA256, hash[:]) {
				return nil // deleted, filled by another replica, or replaced by a new report
			}
			if len(ids) > 0 {
				err := withPgx(conn, func(c *pgx.Conn) error {
					// A listing found now counts from the finding's first
					// sighting: the report that held it listed it already.
					_, err := c.Exec(ctx, `UPDATE findings f SET epss = u.epss, kev = u.kev, risk = u.risk,
 kev_since = CASE WHEN u.kev THEN coalesce(f.kev_since, f.first_seen) END
 FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::float8[], $6::bool[], $7::float8[]) AS u(vuln_id, pkg_name, pkg_version, purl, epss, kev, risk)
 WHERE f.digest = $8 AND f.vuln_id = u.vuln_id AND f.pkg_name = u.pkg_name AND f.pkg_version = u.pkg_version AND f.purl = u.purl`,
						ids, names, versions, purls, epss, kev, risk, digest)
					// The rows are the open keys' lifecycle: nothing else
					// to update (lifecycle.go).
					return err
				})
				if err != nil {
					return fmt.Errorf("update findings: %w", err)
				}
			}
			done = true
			return tx.Model(&reportRow{}).Where("digest = ?", digest).Updates(map[string]any{
				"kev": sum.KEV, "max_risk": sum.MaxRisk, "max_epss": sum.MaxEPSS, "risk_parsed": true, "findings_sha256": fingerprint(fs),
			}).Error
		})
	})
	return done && err == nil, err
}
