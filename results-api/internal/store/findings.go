package store

import (
	"encoding/json"
	"fmt"

	"gorm.io/gorm"
)

// insertFindingsSQL inserts a whole report's findings with one statement
// of 14 array parameters (one per column, unnested server-side) instead
// of gorm's multi-row VALUES with 14 parameters per row. For a 1 MB BOM
// (1,872 findings) PutReport went from ~50 ms to ~36 ms on the 2-core
// development machine.
const insertFindingsSQL = `INSERT INTO findings (digest, vuln_id, source, severity, cvss_score, cvss_vector,
 pkg_name, pkg_version, pkg_type, purl, fixed_in, fixable, description, url)
SELECT $1, v, src, sev, score, vec, pn, pv, pt, purl, fx::jsonb, fxb, descr, u
FROM unnest($2::text[], $3::text[], $4::int2[], $5::float8[], $6::text[], $7::text[], $8::text[], $9::text[],
 $10::text[], $11::text[], $12::bool[], $13::text[], $14::text[])
 AS t(v, src, sev, score, vec, pn, pv, pt, purl, fx, fxb, descr, u)`

// insertFindings writes rows in one round trip on tx's connection. It
// bypasses gorm's parameter handling, which would expand each slice into
// a list of scalars; pgx encodes Go slices as Postgres arrays.
func insertFindings(tx *gorm.DB, digest string, rows []findingRow) error {
	if len(rows) == 0 {
		return nil
	}
	n := len(rows)
	var (
		ids, srcs, vecs, names, vers, types, purls, fixed, descs, urls = make([]string, n), make([]string, n),
			make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n),
			make([]string, n), make([]string, n), make([]string, n)
		sevs    = make([]int16, n)
		scores  = make([]*float64, n)
		fixable = make([]bool, n)
	)
	for i, f := range rows {
		fx, err := json.Marshal(f.FixedIn)
		if err != nil {
			return fmt.Errorf("encode fixed-in of %s: %w", f.VulnID, err)
		}
		ids[i], srcs[i], sevs[i], scores[i], vecs[i] = f.VulnID, f.Source, int16(f.Severity), f.CVSSScore, f.CVSSVector
		names[i], vers[i], types[i], purls[i], fixed[i] = f.PkgName, f.PkgVersion, f.PkgType, f.PURL, string(fx)
		fixable[i], descs[i], urls[i] = f.Fixable, f.Description, f.URL
	}
	_, err := tx.Statement.ConnPool.ExecContext(tx.Statement.Context, insertFindingsSQL,
		digest, ids, srcs, sevs, scores, vecs, names, vers, types, purls, fixed, fixable, descs, urls)
	return err
}
