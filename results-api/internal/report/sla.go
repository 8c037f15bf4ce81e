package report

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Day is the unit SLA windows and finding ages are counted in.
const Day = 24 * time.Hour

// SLA is the remediation policy: how long a finding of each severity may
// stay open from its first sighting, and how long a KEV-listed finding may
// stay open from when it was first seen listed. A finding is due at the
// earlier of the two deadlines that apply to it; a severity without a
// window (and a finding not KEV-listed, or a zero KEV window) has none.
type SLA struct {
	// Windows by severity; a missing severity has no deadline.
	Windows map[Severity]time.Duration
	// KEV is the window of a KEV-listed finding, counted from Seen.KEVSince
	// (0: KEV listing sets no deadline). Grype's CycloneDX carries no CISA
	// due date, so the window stands in for it: CISA's BOD 22-01 gives
	// agencies two weeks from a listing.
	KEV time.Duration
}

// DefaultSLA is the policy without --sla: critical 7 days, high 30,
// medium 90, low 180, KEV-listed 14 days from the listing.
const DefaultSLA = "critical=7d,high=30d,medium=90d,low=180d,kev=14d"

// Due returns when f is due under p (ok false: no deadline applies).
func (p SLA) Due(f Finding) (due time.Time, ok bool) {
	if w, has := p.Windows[f.Severity]; has && !f.Seen.FirstSeen.IsZero() {
		due, ok = f.Seen.FirstSeen.Add(w), true
	}
	if f.Risk.KEV && p.KEV > 0 && !f.Seen.KEVSince.IsZero() {
		if k := f.Seen.KEVSince.Add(p.KEV); !ok || k.Before(due) {
			due, ok = k, true
		}
	}
	return due, ok
}

// Overdue reports whether f is past its deadline at now.
func (p SLA) Overdue(f Finding, now time.Time) bool {
	due, ok := p.Due(f)
	return ok && now.After(due)
}

// AgeDays is how many whole days f has been open at now (0 when unknown).
func AgeDays(f Finding, now time.Time) int {
	if f.Seen.FirstSeen.IsZero() || now.Before(f.Seen.FirstSeen) {
		return 0
	}
	return int(now.Sub(f.Seen.FirstSeen) / Day)
}

// ParseSLA reads a policy written as comma-separated key=duration pairs,
// keys a severity (critical, high, medium, low, negligible, unknown) or
// kev, durations in days ("7d") or as Go durations ("36h"); "none" or an
// empty string is the empty policy (no deadlines).
func ParseSLA(s string) (SLA, error) {
	p := SLA{Windows: map[Severity]time.Duration{}}
	s = strings.TrimSpace(s)
	if s == "" || s == "none" {
		return p, nil
	}
	seen := map[string]bool{}
	for part := range strings.SplitSeq(s, ",") {
		key, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		key = strings.ToLower(strings.TrimSpace(key))
		if !ok || key == "" {
			return SLA{}, fmt.Errorf("sla %q: want key=duration, such as critical=7d", part)
		}
		if seen[key] {
			return SLA{}, fmt.Errorf("sla: %s given twice", key)
		}
		seen[key] = true
		d, err := parseWindow(strings.TrimSpace(val))
		if err != nil {
			return SLA{}, fmt.Errorf("sla %s: %w", key, err)
		}
		if key == "kev" {
			p.KEV = d
			continue
		}
		sev, ok := ParseSeverity(key)
		if !ok || sev.String() != key {
			return SLA{}, fmt.Errorf("sla: unknown key %q: want a severity (critical, high, medium, low, negligible, unknown) or kev", key)
		}
		p.Windows[sev] = d
	}
	return p, nil
}

// parseWindow reads "7d" (whole days) or a Go duration; it must be positive.
func parseWindow(v string) (time.Duration, error) {
	var d time.Duration
	if n, ok := strings.CutSuffix(v, "d"); ok {
		days, err := strconv.Atoi(n)
		if err != nil {
			return 0, fmt.Errorf("%q: want whole days such as 7d, or a duration such as 36h", v)
		}
		d = time.Duration(days) * Day
	} else {
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			return 0, fmt.Errorf("%q: want whole days such as 7d, or a duration such as 36h", v)
		}
	}
	if d <= 0 || d > 100*365*Day {
		return 0, fmt.Errorf("%q: want a window from 1s to 100 years", v)
	}
	return d, nil
}

// String renders p as ParseSLA reads it, worst severity first.
func (p SLA) String() string {
	var parts []string
	sevs := make([]Severity, 0, len(p.Windows))
	for s := range p.Windows {
		sevs = append(sevs, s)
	}
	slices.SortFunc(sevs, func(a, b Severity) int { return int(b) - int(a) })
	for _, s := range sevs {
		parts = append(parts, s.String()+"="+window(p.Windows[s]))
	}
	if p.KEV > 0 {
		parts = append(parts, "kev="+window(p.KEV))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ",")
}

func window(d time.Duration) string {
	if d%Day == 0 {
		return strconv.Itoa(int(d/Day)) + "d"
	}
	return d.String()
}
