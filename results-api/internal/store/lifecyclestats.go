package store

import (
	"context"
	"fmt"
	"time"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
)

// AgeBuckets are the upper bounds (in whole days, inclusive) of the age
// buckets of NamespaceLifecycle.Ages; the last bucket is everything older.
var AgeBuckets = [3]int{7, 30, 90}

// NamespaceLifecycle is the lifecycle of the findings of the images running
// in one namespace (an image counts in each namespace it runs in).
type NamespaceLifecycle struct {
	Namespace string
	// Open counts the findings of the running images; Ages splits them by
	// age in whole days: 0–7, 8–30, 31–90, over 90.
	Open int
	Ages [4]int
	// Overdue counts the open findings past their SLA deadline, OverdueKEV
	// those of them that are KEV-listed.
	Overdue, OverdueKEV int
	// Fixed30 and Fixed90 count the findings a later report of a running
	// image resolved in the last 30 and 90 days; MTTF30 and MTTF90 are
	// their mean time from first seen to resolved (0 when none).
	Fixed30, Fixed90 int
	MTTF30, MTTF90   time.Duration
}

// LifecycleQuery selects the namespaces of NamespaceLifecycles.
type LifecycleQuery struct {
	Now       time.Time
	SLA       report.SLA
	Namespace string // one namespace; empty for every one in ctx's scope
}

// NamespaceLifecycles computes the lifecycle figures per namespace that runs
// an image now, in namespace order, within ctx's scope (a reader limited
// to namespaces sees only those).
func (s *Store) NamespaceLifecycles(ctx context.Context, q LifecycleQuery) ([]NamespaceLifecycle, error) {
	where, args := []string{}, []any{}
	if sc, ok := ScopeOf(ctx); ok {
		where, args = append(where, "namespace = ANY(?::text[])"), append(args, textArray(sc.Namespaces))
	}
	if q.Namespace != "" {
		where, args = append(where, "namespace = ?"), append(args, q.Namespace)
	}
	running := "(SELECT DISTINCT namespace, digest FROM inventory" + whereSQL(where) + ")"
	day := func(n int) time.Time { return q.Now.Add(-time.Duration(n) * report.Day) }
	overdue, oargs := overdueSQL("f", q.SLA, q.Now)
	var open []struct {
		Namespace            string
		Open, A0, A1, A2, A3 int
		Overdue              int
		OverdueKEV           int `gorm:"column:overdue_kev"`
	}
	// Age in whole days d ≤ n ⇔ first_seen > now − (n+1) days.
	sqlText := fmt.Sprintf(`SELECT d.namespace, count(f.id) AS open,
 count(f.id) FILTER (WHERE f.first_seen > ?) AS a0,
 count(f.id) FILTER (WHERE f.first_seen <= ? AND f.first_seen > ?) AS a1,
 count(f.id) FILTER (WHERE f.first_seen <= ? AND f.first_seen > ?) AS a2,
 count(f.id) FILTER (WHERE f.first_seen <= ?) AS a3,
 count(f.id) FILTER (WHERE %[1]s) AS overdue,
 count(f.id) FILTER (WHERE f.kev AND %[1]s) AS overdue_kev
 FROM %[2]s d LEFT JOIN findings f ON f.digest = d.digest
 GROUP BY d.namespace ORDER BY d.namespace`, overdue, running)
	b0, b1, b2 := day(AgeBuckets[0]+1), day(AgeBuckets[1]+1), day(AgeBuckets[2]+1)
	qargs := append([]any{b0, b0, b1, b1, b2, b2}, oargs...)
	qargs = append(qargs, oargs...)
	qargs = append(qargs, args...)
	db := s.db.WithContext(ctx)
	if err := db.Raw(sqlText, qargs...).Scan(&open).Error; err != nil {
		return nil, s.fail("namespace lifecycle", err)
	}
	out := make([]NamespaceLifecycle, len(open))
	idx := make(map[string]int, len(open))
	for i, o := range open {
		idx[o.Namespace] = i
		out[i] = NamespaceLifecycle{Namespace: o.Namespace, Open: o.Open, Ages: [4]int{o.A0, o.A1, o.A2, o.A3},
			Overdue: o.Overdue, OverdueKEV: o.OverdueKEV}
	}
	var fixed []struct {
		Namespace        string
		Fixed30, Fixed90 int
		Mean30, Mean90   *float64
	}
	err := db.Raw(`SELECT d.namespace,
 count(*) FILTER (WHERE l.resolved_at >= ?) AS fixed30, count(*) AS fixed90,
 avg(extract(epoch FROM l.resolved_at - l.first_seen)) FILTER (WHERE l.resolved_at >= ?) AS mean30,
 avg(extract(epoch FROM l.resolved_at - l.first_seen)) AS mean90
 FROM `+running+` d JOIN finding_lifecycle l ON l.digest = d.digest AND l.resolved_at >= ?
 GROUP BY d.namespace`, append([]any{day(30), day(30)}, append(args, day(90))...)...).Scan(&fixed).Error
	if err != nil {
		return nil, s.fail("namespace time to fix", err)
	}
	for _, f := range fixed {
		i, ok := idx[f.Namespace]
		if !ok {
			continue
		}
		out[i].Fixed30, out[i].Fixed90 = f.Fixed30, f.Fixed90
		out[i].MTTF30, out[i].MTTF90 = meanSeconds(f.Mean30), meanSeconds(f.Mean90)
	}
	return out, nil
}

func meanSeconds(s *float64) time.Duration {
	if s == nil {
		return 0
	}
	return time.Duration(*s * float64(time.Second))
}
