package bench

import (
	"context"
	"database/sql"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx" for seeding
)

// seed bulk-inserts n synthetic report summaries (digest i = bomtest.Digest(i),
// i in 1..n; every 10th image has critical findings) and, when perReport >
// 0, that many synthetic findings per report, each vulnerability id shared
// by about n*perReport/2000 images. It writes rows in one INSERT … SELECT
// generate_series each, which is seconds instead of minutes of PUTs; the
// benchmarks then read them through the real HTTP handlers. Finding rows
// are not consistent with the summary counts, which no benchmarked query
// needs. ANALYZE runs afterwards, as autovacuum would do in a live system.
func seed(b *testing.B, dsn string, n, perReport int) {
	b.Helper()
	stmts := []seedStmt{{`INSERT INTO reports (digest, image, scanned_at, stored_at, created_at, grype_version,
  critical, high, medium, low, negligible, unknown, fixable, findings, max_severity, bom_sha256)
SELECT d, 'registry.example/team' || (i % 200) || '/app' || i || '@' || d, ts, ts, ts, '0.121.2',
  c, h, m, l, ng, 0, f, c + h + m + l + ng,
  CASE WHEN c > 0 THEN 5 WHEN h > 0 THEN 4 WHEN m > 0 THEN 3 WHEN l > 0 THEN 2 WHEN ng > 0 THEN 1 ELSE 0 END,
  sha256(convert_to(d, 'UTF8'))
FROM (SELECT i, 'sha256:' || lpad(to_hex(i), 64, '0') AS d, timestamptz '2026-11-01' + i * interval '1 second' AS ts,
  CASE WHEN i % 10 = 0 THEN 1 + i % 3 ELSE 0 END AS c, i % 7 AS h, i % 11 AS m, i % 13 AS l, i % 5 AS ng, i % 4 AS f
  FROM generate_series(1, $1::int) i) s`, []any{n}}}
	if perReport > 0 {
		stmts = append(stmts, seedStmt{`INSERT INTO findings (digest, vuln_id, source, severity, cvss_score, cvss_vector,
  pkg_name, pkg_version, pkg_type, purl, fixed_in, fixable, description, url, first_seen)
SELECT 'sha256:' || lpad(to_hex(i), 64, '0'), v, 'alpine-distro-alpine-3.20', 1 + j % 5, (j % 100) / 10.0, '',
  'pkg' || j, '1.' || j, 'apk', 'pkg:apk/alpine/pkg' || j || '@1.' || j,
  CASE WHEN j % 2 = 0 THEN '["2.0.0"]'::jsonb ELSE '[]'::jsonb END, j % 2 = 0,
  'synthetic benchmark finding', 'https://example.invalid/' || v, now() - ((i * 13 + j * 7) % 200) * interval '1 day'
FROM generate_series(1, $1::int) i, generate_series(1, $2::int) j,
  LATERAL (SELECT 'CVE-2025-' || lpad(((i * 7 + j * 131) % 2000)::text, 5, '0') AS v) x`, []any{n, perReport}})
	}
	execSeed(b, dsn, append(stmts, seedStmt{"ANALYZE", nil})...)
}

// seedStmt is one SQL statement of a seeding helper, with its arguments.
type seedStmt struct {
	sql  string
	args []any
}

// execSeed runs the statements in order on dsn, within five minutes.
func execSeed(b *testing.B, dsn string, stmts ...seedStmt) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	for _, st := range stmts {
		if _, err := db.ExecContext(ctx, st.sql, st.args...); err != nil {
			b.Fatalf("seed: %v\n%s", err, st.sql)
		}
	}
}
