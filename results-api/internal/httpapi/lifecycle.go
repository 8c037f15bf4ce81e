package httpapi

import (
	"net/http"
	"strconv"
	"time"

	"github.com/crowsnest-dev/crowsnest/results-api/api"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
)

// now is the clock finding ages and SLA deadlines are computed at.
func (s *Server) now() time.Time {
	if s.cfg.Now != nil {
		return s.cfg.Now()
	}
	return time.Now()
}

// ageQuery reads the overdue (true/false) and minAgeDays filters.
func (s *Server) ageQuery(r *http.Request) (store.AgeFilter, error) {
	q := r.URL.Query()
	f := store.AgeFilter{Now: s.now(), SLA: s.cfg.SLA}
	if v := q.Get("overdue"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return f, badQuery("overdue must be true or false")
		}
		f.Overdue = b
	}
	if v := q.Get("minAgeDays"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 36500 {
			return f, badQuery("minAgeDays must be a whole number of days from 0 to 36500")
		}
		f.MinAgeDays = n
	}
	return f, nil
}

// lifecycleFields renders a finding's first sighting, age, deadline and
// whether it is overdue at now under sla (all absent for a finding with no
// recorded sighting).
func lifecycleFields(f report.Finding, sla report.SLA, now time.Time) (first *time.Time, age *int, due *time.Time, overdue *bool) {
	if f.Seen.FirstSeen.IsZero() {
		return nil, nil, nil, nil
	}
	fs, days := f.Seen.FirstSeen, report.AgeDays(f, now)
	over := sla.Overdue(f, now)
	if d, ok := sla.Due(f); ok {
		due = &d
	}
	return &fs, &days, due, &over
}

// getLifecycle serves the lifecycle figures per namespace. The open
// findings (open, ages, overdue, overdueKev) are those active in the
// namespace's view: its exceptions and the cluster's apply; the fixed
// counts and times to fix are history and count every resolved finding.
func (s *Server) getLifecycle(w http.ResponseWriter, r *http.Request) {
	ns := r.URL.Query().Get("namespace")
	if len(ns) > 253 {
		writeError(w, r, badQuery("namespace must be at most 253 characters"))
		return
	}
	now := s.now()
	got, err := s.cfg.Store.NamespaceLifecycles(r.Context(), store.LifecycleQuery{Now: now, SLA: s.cfg.SLA, Namespace: ns})
	if err != nil {
		writeError(w, r, err)
		return
	}
	var only []string // nil: every namespace in the caller's scope
	if ns != "" {
		only = []string{ns}
	}
	sup, err := s.suppressedPerNamespace(r.Context(), only, nil, now)
	if err != nil {
		writeError(w, r, err)
		return
	}
	idx := make(map[string]int, len(got))
	for i, n := range got {
		idx[n.Namespace] = i
	}
	for k, t := range sup {
		i, ok := idx[k.namespace]
		if !ok {
			continue
		}
		n := &got[i]
		n.Open, n.Overdue, n.OverdueKEV = n.Open-t.findings, n.Overdue-t.overdue, n.OverdueKEV-t.overdueKEV
		for b := range n.Ages {
			n.Ages[b] -= t.ages[b]
		}
	}
	out := api.Lifecycle{Sla: s.cfg.SLA.String(), Namespaces: make([]api.NamespaceLifecycle, len(got))}
	for i, n := range got {
		out.Namespaces[i] = api.NamespaceLifecycle{Namespace: n.Namespace, Open: n.Open,
			Ages:    api.AgeBuckets{D0to7: n.Ages[0], D8to30: n.Ages[1], D31to90: n.Ages[2], Over90: n.Ages[3]},
			Overdue: n.Overdue, OverdueKev: n.OverdueKEV, Fixed30d: n.Fixed30, Fixed90d: n.Fixed90,
			MeanTimeToFix30d: meanDays(n.Fixed30, n.MTTF30), MeanTimeToFix90d: meanDays(n.Fixed90, n.MTTF90)}
	}
	writeJSON(w, http.StatusOK, out)
}

// meanDays renders a mean duration in days, absent when nothing was fixed.
func meanDays(n int, d time.Duration) *float64 {
	if n == 0 {
		return nil
	}
	days := float64(d) / float64(report.Day)
	return &days
}
