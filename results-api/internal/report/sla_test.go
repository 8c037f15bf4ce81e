package report

import (
	"testing"
	"time"
)

func TestParseSLA(t *testing.T) {
	p, err := ParseSLA(DefaultSLA)
	if err != nil {
		t.Fatal(err)
	}
	if p.Windows[Critical] != 7*Day || p.Windows[Low] != 180*Day || p.KEV != 14*Day || len(p.Windows) != 4 {
		t.Errorf("default policy %+v", p)
	}
	if p.String() != DefaultSLA {
		t.Errorf("String() = %q, want %q", p.String(), DefaultSLA)
	}
	if p, err := ParseSLA("none"); err != nil || len(p.Windows) != 0 || p.KEV != 0 {
		t.Errorf("none: %+v, %v", p, err)
	}
	if p, err := ParseSLA(" High = 36h , kev=1d"); err != nil || p.Windows[High] != 36*time.Hour || p.KEV != Day {
		t.Errorf("mixed case and spaces: %+v, %v", p, err)
	}
	for _, bad := range []string{"critical", "critical=0d", "critical=-1d", "critical=7", "severe=7d", "critical=7d,critical=8d", "none=1d", "=7d"} {
		if _, err := ParseSLA(bad); err == nil {
			t.Errorf("ParseSLA(%q) accepted", bad)
		}
	}
}

func TestSLADue(t *testing.T) {
	p, _ := ParseSLA(DefaultSLA)
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		f    Finding
		due  time.Time
		ok   bool
	}{
		{"critical", Finding{Severity: Critical, Seen: Seen{FirstSeen: t0}}, t0.Add(7 * Day), true},
		{"negligible: no window", Finding{Severity: Negligible, Seen: Seen{FirstSeen: t0}}, time.Time{}, false},
		{"KEV earlier than the severity's", Finding{Severity: Low, Risk: Risk{KEV: true}, Seen: Seen{FirstSeen: t0, KEVSince: t0.Add(Day)}}, t0.Add(15 * Day), true},
		{"severity earlier than KEV's", Finding{Severity: Critical, Risk: Risk{KEV: true}, Seen: Seen{FirstSeen: t0, KEVSince: t0.Add(Day)}}, t0.Add(7 * Day), true},
		{"KEV on a negligible", Finding{Severity: Negligible, Risk: Risk{KEV: true}, Seen: Seen{FirstSeen: t0, KEVSince: t0}}, t0.Add(14 * Day), true},
		{"never stored", Finding{Severity: Critical}, time.Time{}, false},
	} {
		due, ok := p.Due(tc.f)
		if ok != tc.ok || !due.Equal(tc.due) {
			t.Errorf("%s: due %v %v, want %v %v", tc.name, due, ok, tc.due, tc.ok)
		}
		if over := p.Overdue(tc.f, tc.due.Add(time.Second)); over != tc.ok {
			t.Errorf("%s: overdue a second after the deadline = %v", tc.name, over)
		}
		if p.Overdue(tc.f, tc.due) {
			t.Errorf("%s: overdue at the deadline itself", tc.name)
		}
	}
}
