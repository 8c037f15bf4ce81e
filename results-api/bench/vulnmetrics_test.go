package bench

import (
	"context"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/test/support/pgtest"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/vulnmetrics"
)

// BenchmarkVulnMetricsRefresh is one refresh of the vulnerability metrics
// (every aggregate query, in one read-only transaction, and the swap of
// the exported snapshot) over 10,000 reports of 30 findings each, 9,000 of
// them running in 2,000 namespaces (every 5th also in a second one), 500
// running digests without a report (100 failed scans), and 2,000 recent
// changes listing 5 new findings each. (Smoke mode: 500 reports, 100
// namespaces.)
func BenchmarkVulnMetricsRefresh(b *testing.B) {
	reports, perReport, namespaces := 10_000, 30, 2_000
	if smoke {
		reports, perReport, namespaces = 500, 5, 100
	}
	ctx := context.Background()
	dsn, drop, err := pgtest.CreateDatabase(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = drop() })
	st, err := store.Open(ctx, dsn, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	seed(b, dsn, reports, perReport)
	seedRuntime(b, dsn, reports, namespaces)
	col := vulnmetrics.NewCollector()
	r := vulnmetrics.New(st, col, vulnmetrics.Options{})
	b.ResetTimer()
	lat := make([]time.Duration, 0, b.N)
	for b.Loop() {
		t0 := time.Now()
		if err := r.Refresh(ctx); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	b.ReportMetric(ms(p99(lat)), "p99-ms")
}

// seedRuntime writes the inventory, scans and changes over seed's reports:
// digest i (i ≤ 90% of n) runs in namespace i mod namespaces, every 5th in
// the next one too; n+1 … n+n/20 run without a report, every 5th of them
// with a failed scan; 2,000 changes of the first digests within the last
// week list 5 of their findings as new.
func seedRuntime(b *testing.B, dsn string, n, namespaces int) {
	b.Helper()
	execSeed(b, dsn, []seedStmt{
		{`INSERT INTO inventory (namespace, kind, name, container, digest, image, pods)
SELECT 'ns-' || (i % $2), 'Deployment', 'app-' || i, 'app', 'sha256:' || lpad(to_hex(i), 64, '0'), 'img', 1
FROM generate_series(1, $1 * 9 / 10) i
UNION ALL SELECT 'ns-' || ((i + 1) % $2), 'Deployment', 'app-' || i, 'app', 'sha256:' || lpad(to_hex(i), 64, '0'), 'img', 1
FROM generate_series(5, $1 * 9 / 10, 5) i
UNION ALL SELECT 'ns-' || (i % $2), 'Deployment', 'pending-' || i, 'app', 'sha256:' || lpad(to_hex(i), 64, '0'), 'img', 1
FROM generate_series($1 + 1, $1 + $1 / 20) i`, []any{n, namespaces}},
		{`INSERT INTO scans (digest, status, updated_at)
SELECT 'sha256:' || lpad(to_hex(i), 64, '0'), CASE WHEN i % 5 = 0 THEN 'failed' ELSE 'queued' END, now()
FROM generate_series($1 + 1, $1 + $1 / 20) i`, []any{n}},
		{`INSERT INTO report_changes (digest, cause, changed_at, new_high)
SELECT 'sha256:' || lpad(to_hex(i), 64, '0'), 'rematch', now() - (i % 10) * interval '1 day', 5
FROM generate_series(1, least($1, 2000)) i`, []any{n}},
		{`INSERT INTO report_change_findings (change_id, kind, vuln_id, severity, pkg_name, pkg_version, pkg_type)
SELECT c.id, 'new', f.vuln_id, f.severity, f.pkg_name, f.pkg_version, f.pkg_type
FROM report_changes c, LATERAL (SELECT * FROM findings f WHERE f.digest = c.digest ORDER BY f.id LIMIT 5) f`, nil},
		{`ANALYZE`, nil},
	}...)
}
