package store

import (
	"context"
	"time"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
)

// TopVulnerability is a vulnerability and how many images carry it.
type TopVulnerability struct {
	ID       string
	Severity report.Severity
	Images   int
}

// Stats are the dashboard totals.
type Stats struct {
	Images, Findings, Fixable int
	// KEVRunning counts the KEV-listed findings of images running now.
	KEVRunning int
	// Overdue counts the findings of images running now past their SLA
	// deadline; OverdueKEV those of them that are KEV-listed.
	Overdue, OverdueKEV int
	Counts              report.Counts
	Scans               map[report.ScanState]int
	TopImages           []report.Summary
	TopVulnerabilities  []TopVulnerability
}

// Stats computes the dashboard totals; overdue findings at now under sla.
func (s *Store) Stats(ctx context.Context, now time.Time, sla report.SLA) (*Stats, error) {
	db := s.db.WithContext(ctx)
	var t struct {
		Images, Findings, Fixable                        int
		Critical, High, Medium, Low, Negligible, Unknown int
		KEVRunning                                       int
	}
	err := db.Raw(`SELECT count(*) AS images, coalesce(sum(findings),0) AS findings, coalesce(sum(fixable),0) AS fixable,
 coalesce(sum(critical),0) AS critical, coalesce(sum(high),0) AS high, coalesce(sum(medium),0) AS medium,
 coalesce(sum(low),0) AS low, coalesce(sum(negligible),0) AS negligible, coalesce(sum(unknown),0) AS unknown,
 coalesce(sum(kev) FILTER (WHERE kev > 0 AND EXISTS (SELECT 1 FROM inventory w WHERE w.digest = r.digest)),0) AS kev_running
 FROM reports r`+cond(ctx, "r.digest"), args(ctx)...).Scan(&t).Error
	if err != nil {
		return nil, s.fail("stats totals", err)
	}
	st := &Stats{Images: t.Images, Findings: t.Findings, Fixable: t.Fixable, KEVRunning: t.KEVRunning,
		Counts: report.Counts{Critical: t.Critical, High: t.High, Medium: t.Medium, Low: t.Low, Negligible: t.Negligible, Unknown: t.Unknown},
		Scans:  map[report.ScanState]int{}}
	overdue, oargs := overdueSQL("f", sla, now)
	var od struct{ Overdue, OverdueKEV int }
	where, wargs := addScope(ctx, "f.digest", []string{"EXISTS (SELECT 1 FROM inventory w WHERE w.digest = f.digest)", overdue}, oargs)
	if err := db.Raw(`SELECT count(*) AS overdue, count(*) FILTER (WHERE f.kev) AS overdue_kev FROM findings f`+whereSQL(where), wargs...).
		Scan(&od).Error; err != nil {
		return nil, s.fail("stats overdue", err)
	}
	st.Overdue, st.OverdueKEV = od.Overdue, od.OverdueKEV
	var byStatus []struct {
		Status string
		N      int
	}
	if err := db.Raw("SELECT status, count(*) AS n FROM scans s"+cond(ctx, "s.digest")+" GROUP BY status", args(ctx)...).Scan(&byStatus).Error; err != nil {
		return nil, s.fail("stats scans", err)
	}
	for _, b := range byStatus {
		st.Scans[report.ScanState(b.Status)] = b.N
	}
	var top []listRow
	if err := db.Raw(listSelect+cond(ctx, "r.digest")+" ORDER BY r.critical DESC, r.high DESC, r.medium DESC, r.digest LIMIT 10", args(ctx)...).Scan(&top).Error; err != nil {
		return nil, s.fail("stats top images", err)
	}
	for _, r := range top {
		st.TopImages = append(st.TopImages, r.summary(ctx))
	}
	var tv []struct {
		VulnID   string
		Severity int
		Images   int
	}
	err = db.Raw(`SELECT vuln_id, max(severity) AS severity, count(DISTINCT digest) AS images FROM findings f`+cond(ctx, "f.digest")+`
 GROUP BY vuln_id ORDER BY max(severity) DESC, count(DISTINCT digest) DESC, vuln_id LIMIT 10`, args(ctx)...).Scan(&tv).Error
	if err != nil {
		return nil, s.fail("stats top vulnerabilities", err)
	}
	for _, v := range tv {
		st.TopVulnerabilities = append(st.TopVulnerabilities, TopVulnerability{ID: v.VulnID, Severity: report.Severity(v.Severity), Images: v.Images})
	}
	return st, nil
}

// cond is ctx's scope filter on col as a WHERE clause ("" without one);
// args are its arguments.
func cond(ctx context.Context, col string) string {
	f, _ := scopeFilter(ctx, col)
	if f == "" {
		return ""
	}
	return " WHERE " + f
}

func args(ctx context.Context) []any {
	_, a := scopeFilter(ctx, "")
	return a
}
