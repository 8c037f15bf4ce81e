package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
)

// VulnStats are the fleet's vulnerability totals for metrics. An image is
// running when some namespace's inventory lists its digest now (as the
// report list's running filter decides); a finding is one findings row,
// one per (digest, vulnerability id, affected component), counted at the
// severity stored.
type VulnStats struct {
	// Running are the findings of the running images with a report.
	Running report.Counts
	// RunningKEV are those of Running that CISA's KEV catalog lists.
	RunningKEV report.Counts
	// Namespaces are the same per namespace an image runs in (an image
	// counts in each), one entry per namespace with a running digest, in
	// namespace order.
	Namespaces []NamespaceCounts
	Images     ImageStates
	// TopVulnerabilities are the vulnerability ids found in the most
	// running images (then the worst, then by id), at most the query's
	// TopLimit; Severity is the worst stored for the id.
	TopVulnerabilities []TopVulnerability
	// New are the findings of running images that a change since the
	// query's NewSince recorded as new and that the image's report still
	// has, each counted once.
	New report.Counts
	// Overdue are the findings of running images past their SLA deadline
	// at the query's Now, per namespace an image runs in (an image counts
	// in each), one entry per namespace with one, in namespace order.
	Overdue []NamespaceOverdue
}

// NamespaceOverdue counts the overdue findings of one namespace's running
// images by severity, and those of them that are KEV-listed.
type NamespaceOverdue struct {
	Namespace string
	Counts    report.Counts
	KEV       int
}

// NamespaceCounts are the findings of the running images of one
// namespace, and those of them that CISA's KEV catalog lists.
type NamespaceCounts struct {
	Namespace string
	Counts    report.Counts
	KEV       report.Counts
}

// ImageStates count images (digests) by whether they run and have a report.
type ImageStates struct {
	Running    int // running, with a report
	NotRunning int // with a report, not running now
	Failed     int // running, no report, its last scan failed
	Unscanned  int // running, no report, its scan not failed (or none known)
}

// VulnStatsQuery tunes VulnStats.
type VulnStatsQuery struct {
	TopLimit int        // top vulnerabilities, at least 1
	NewSince time.Time  // findings recorded as new at or after it
	Now      time.Time  // the clock of overdue findings
	SLA      report.SLA // the deadlines of overdue findings
}

// VulnStats computes the fleet's vulnerability totals in one read-only
// transaction (one snapshot of the data, so the numbers agree with each
// other). It reads every report and running digest, not ctx's scope: the
// numbers are for metrics, not for a reader.
func (s *Store) VulnStats(ctx context.Context, q VulnStatsQuery) (*VulnStats, error) {
	if q.TopLimit < 1 {
		return nil, fmt.Errorf("vulnerability stats: top limit %d, want at least 1", q.TopLimit)
	}
	out := &VulnStats{}
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		return vulnStats(tx, q, out)
	}, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		return nil, s.fail("vulnerability stats", err)
	}
	return out, nil
}

// runningDigests are the digests some namespace runs now: the report
// list's running filter (ListQuery.Running) as a set.
const runningDigests = `(SELECT DISTINCT digest FROM inventory)`

// vulnStats runs VulnStats' queries in tx. They aggregate whole tables (at
// 10,000 reports of 30 findings in 2,000 namespaces the findings scan of
// the top vulnerabilities is most of the time; see
// BenchmarkVulnMetricsRefresh), so no index would serve them better.
func vulnStats(tx *gorm.DB, q VulnStatsQuery, out *VulnStats) error {
	// The report counts are the findings rows per severity (ingest counts
	// them as it lists them): summing them reads no findings.
	var t struct {
		report.Counts       `gorm:"embedded"`
		Running, NotRunning int
	}
	// One hash join with the running digests: an EXISTS per FILTER would
	// probe the inventory once per report and column (10x slower at 10,000
	// reports).
	err := tx.Raw(`SELECT count(d.digest) AS running, count(*) - count(d.digest) AS not_running,
 coalesce(sum(r.critical) FILTER (WHERE d.digest IS NOT NULL),0) AS critical,
 coalesce(sum(r.high) FILTER (WHERE d.digest IS NOT NULL),0) AS high,
 coalesce(sum(r.medium) FILTER (WHERE d.digest IS NOT NULL),0) AS medium,
 coalesce(sum(r.low) FILTER (WHERE d.digest IS NOT NULL),0) AS low,
 coalesce(sum(r.negligible) FILTER (WHERE d.digest IS NOT NULL),0) AS negligible,
 coalesce(sum(r.unknown) FILTER (WHERE d.digest IS NOT NULL),0) AS unknown
 FROM reports r LEFT JOIN ` + runningDigests + ` d ON d.digest = r.digest`).Scan(&t).Error
	if err != nil {
		return fmt.Errorf("totals: %w", err)
	}
	out.Running, out.Images.Running, out.Images.NotRunning = t.Counts, t.Running, t.NotRunning

	var unreported struct{ Failed, Unscanned int }
	err = tx.Raw(`SELECT count(*) FILTER (WHERE s.status = 'failed') AS failed,
 count(*) FILTER (WHERE s.status IS DISTINCT FROM 'failed') AS unscanned
 FROM ` + runningDigests + ` d LEFT JOIN scans s ON s.digest = d.digest
 WHERE NOT EXISTS (SELECT 1 FROM reports r WHERE r.digest = d.digest)`).Scan(&unreported).Error
	if err != nil {
		return fmt.Errorf("images without a report: %w", err)
	}
	out.Images.Failed, out.Images.Unscanned = unreported.Failed, unreported.Unscanned

	var ns []struct {
		Namespace     string
		report.Counts `gorm:"embedded"`
	}
	err = tx.Raw(`SELECT d.namespace, coalesce(sum(r.critical),0) AS critical, coalesce(sum(r.high),0) AS high,
 coalesce(sum(r.medium),0) AS medium, coalesce(sum(r.low),0) AS low, coalesce(sum(r.negligible),0) AS negligible,
 coalesce(sum(r.unknown),0) AS unknown
 FROM (SELECT DISTINCT namespace, digest FROM inventory) d LEFT JOIN reports r ON r.digest = d.digest
 GROUP BY d.namespace ORDER BY d.namespace`).Scan(&ns).Error
	if err != nil {
		return fmt.Errorf("namespaces: %w", err)
	}
	out.Namespaces = make([]NamespaceCounts, len(ns))
	for i, n := range ns {
		out.Namespaces[i] = NamespaceCounts{Namespace: n.Namespace, Counts: n.Counts}
	}

	var top []struct {
		VulnID           string
		Severity, Images int
	}
	err = tx.Raw(`SELECT f.vuln_id, max(f.severity) AS severity, count(DISTINCT f.digest) AS images FROM findings f
 WHERE f.digest IN `+runningDigests+`
 GROUP BY f.vuln_id ORDER BY 3 DESC, 2 DESC, 1 LIMIT ?`, q.TopLimit).Scan(&top).Error
	if err != nil {
		return fmt.Errorf("top vulnerabilities: %w", err)
	}
	for _, v := range top {
		out.TopVulnerabilities = append(out.TopVulnerabilities, TopVulnerability{ID: v.VulnID, Severity: report.Severity(v.Severity), Images: v.Images})
	}

	// A finding recorded as new by several recent changes (found,
	// resolved, found again) counts once: the IN keeps each findings row
	// once. A baseline (an image's first report) lists no findings.
	var news []struct{ Severity, N int }
	err = tx.Raw(`SELECT f.severity, count(*) AS n FROM findings f WHERE f.id IN (
 SELECT f2.id FROM report_changes c
  JOIN report_change_findings cf ON cf.change_id = c.id AND cf.kind = 'new'
  JOIN findings f2 ON f2.digest = c.digest AND f2.vuln_id = cf.vuln_id AND f2.pkg_name = cf.pkg_name
   AND f2.pkg_version = cf.pkg_version AND f2.pkg_type = cf.pkg_type
 WHERE c.changed_at >= ? AND NOT c.baseline AND EXISTS (SELECT 1 FROM inventory i WHERE i.digest = c.digest))
 GROUP BY f.severity`, q.NewSince).Scan(&news).Error
	if err != nil {
		return fmt.Errorf("new findings: %w", err)
	}
	for _, n := range news {
		addCount(&out.New, report.Severity(n.Severity), n.N)
	}
	if err := kevStats(tx, out); err != nil {
		return err
	}
	return overdueStats(tx, q, out)
}

// kevStats fills out.RunningKEV and each namespace's KEV counts: the
// KEV-listed findings rows of the running images, by stored severity. One
// pass over the KEV-listed rows (few of all findings) joined to the
// running digests per namespace.
func kevStats(tx *gorm.DB, out *VulnStats) error {
	var rows []struct {
		Namespace   string
		Severity, N int
	}
	err := tx.Raw(`SELECT d.namespace, f.severity, count(*) AS n
 FROM (SELECT DISTINCT namespace, digest FROM inventory) d JOIN findings f ON f.digest = d.digest
 WHERE f.kev GROUP BY d.namespace, f.severity ORDER BY d.namespace`).Scan(&rows).Error
	if err != nil {
		return fmt.Errorf("KEV findings per namespace: %w", err)
	}
	// By name, not by merging the two ordered lists: the database's
	// collation need not order names as Go compares them.
	at := make(map[string]int, len(out.Namespaces))
	for i, n := range out.Namespaces {
		at[n.Namespace] = i
	}
	for _, r := range rows {
		// Both come from the inventory's running digests, so every KEV
		// namespace is among out.Namespaces.
		if i, ok := at[r.Namespace]; ok {
			addCount(&out.Namespaces[i].KEV, report.Severity(r.Severity), r.N)
		}
	}
	var fleet []struct{ Severity, N int }
	err = tx.Raw(`SELECT f.severity, count(*) AS n FROM findings f
 WHERE f.kev AND f.digest IN ` + runningDigests + ` GROUP BY f.severity`).Scan(&fleet).Error
	if err != nil {
		return fmt.Errorf("KEV findings: %w", err)
	}
	for _, r := range fleet {
		addCount(&out.RunningKEV, report.Severity(r.Severity), r.N)
	}
	return nil
}

// overdueStats fills out.Overdue.
func overdueStats(tx *gorm.DB, q VulnStatsQuery, out *VulnStats) error {
	overdue, oargs := overdueSQL("f", q.SLA, q.Now)
	var rows []struct {
		Namespace   string
		Severity, N int
		KEV         int `gorm:"column:kev"`
	}
	err := tx.Raw(`SELECT d.namespace, f.severity, count(*) AS n, count(*) FILTER (WHERE f.kev) AS kev
 FROM (SELECT DISTINCT namespace, digest FROM inventory) d JOIN findings f ON f.digest = d.digest
 WHERE `+overdue+` GROUP BY d.namespace, f.severity ORDER BY d.namespace`, oargs...).Scan(&rows).Error
	if err != nil {
		return fmt.Errorf("overdue findings: %w", err)
	}
	for _, r := range rows {
		if len(out.Overdue) == 0 || out.Overdue[len(out.Overdue)-1].Namespace != r.Namespace {
			out.Overdue = append(out.Overdue, NamespaceOverdue{Namespace: r.Namespace})
		}
		o := &out.Overdue[len(out.Overdue)-1]
		addCount(&o.Counts, report.Severity(r.Severity), r.N)
		o.KEV += r.KEV
	}
	return nil
}

// addCount adds n findings of severity sev to c (as n calls of c.Add).
func addCount(c *report.Counts, sev report.Severity, n int) {
	switch sev {
	case report.Critical:
		c.Critical += n
	case report.High:
		c.High += n
	case report.Medium:
		c.Medium += n
	case report.Low:
		c.Low += n
	case report.Negligible:
		c.Negligible += n
	default:
		c.Unknown += n
	}
}
