package store

import (
	"fmt"
	"strings"
	"time"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
)

// RiskFilter selects by Grype's risk data: KEV keeps KEV-listed findings
// (for report lists: images with one), MinEPSS those with an EPSS score at
// or above it (nil: no filter).
type RiskFilter struct {
	KEV     bool
	MinEPSS *float64
}

// riskFilters adds q.Risk's conditions on reports r.
func riskFilters(q ListQuery, where []string, args []any) ([]string, []any) {
	if q.Risk.KEV {
		where = append(where, "r.kev > 0")
	}
	if q.Risk.MinEPSS != nil {
		where = append(where, "r.max_epss >= ?")
		args = append(args, *q.Risk.MinEPSS)
	}
	return where, args
}

// findingRiskFilters adds f's conditions on findings (alias a).
func findingRiskFilters(a string, f RiskFilter, where []string, args []any) ([]string, []any) {
	if f.KEV {
		where = append(where, a+".kev")
	}
	if f.MinEPSS != nil {
		where = append(where, a+".epss >= ?")
		args = append(args, *f.MinEPSS)
	}
	return where, args
}

// AgeFilter selects findings by their lifecycle at Now: Overdue keeps
// those past their deadline under SLA (report.SLA.Overdue), MinAgeDays
// those open for at least that many whole days (report.AgeDays).
type AgeFilter struct {
	Now        time.Time
	SLA        report.SLA
	Overdue    bool
	MinAgeDays int
}

// active reports whether the filter leaves any finding out.
func (q AgeFilter) active() bool { return q.Overdue || q.MinAgeDays > 0 }

// filters adds the filter's conditions on findings (alias a): each
// deadline as "first seen before now minus the window", so no expression
// is computed per row.
func (q AgeFilter) filters(a string, where []string, args []any) ([]string, []any) {
	if q.Overdue {
		cond, cargs := overdueSQL(a, q.SLA, q.Now)
		where, args = append(where, cond), append(args, cargs...)
	}
	if q.MinAgeDays > 0 {
		where = append(where, a+".first_seen <= ?")
		args = append(args, q.Now.Add(-time.Duration(q.MinAgeDays)*report.Day))
	}
	return where, args
}

// overdueSQL is the condition "the finding (alias a) is overdue at now
// under p" with its arguments; FALSE when p sets no deadline.
func overdueSQL(a string, p report.SLA, now time.Time) (string, []any) {
	var terms []string
	var args []any
	for _, sev := range []report.Severity{report.Critical, report.High, report.Medium, report.Low, report.Negligible, report.Unknown} {
		if w, ok := p.Windows[sev]; ok {
			terms = append(terms, fmt.Sprintf("(%s.severity = %d AND %s.first_seen < ?)", a, int(sev), a))
			args = append(args, now.Add(-w))
		}
	}
	if p.KEV > 0 {
		terms = append(terms, fmt.Sprintf("(%s.kev AND %s.kev_since < ?)", a, a))
		args = append(args, now.Add(-p.KEV))
	}
	if len(terms) == 0 {
		return "FALSE", nil
	}
	return "(" + strings.Join(terms, " OR ") + ")", args
}
