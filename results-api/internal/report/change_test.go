package report_test

import (
	"slices"
	"testing"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
)

func f(id string, sev report.Severity, pkg string) report.Finding {
	return report.Finding{ID: id, Severity: sev, Package: report.Package{Name: pkg, Version: "1.0", Type: "apk",
		PURL: "pkg:apk/alpine/" + pkg + "@1.0"}}
}

func stored(fs ...report.Finding) []report.ChangedFinding {
	out := make([]report.ChangedFinding, len(fs))
	for i := range fs {
		out[i] = report.ChangedOf(&fs[i])
	}
	return out
}

func ids(fs []report.ChangedFinding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.ID+"/"+f.Name+"/"+f.Severity.String())
	}
	return out
}

func TestDiff(t *testing.T) {
	a, b, c := f("CVE-A", report.Critical, "musl"), f("CVE-B", report.High, "zlib"), f("CVE-C", report.Low, "busybox")
	for _, tc := range []struct {
		name           string
		prev           []report.ChangedFinding
		next           []report.Finding
		new, resolved  []string
		newN, resolvdN report.Counts
		empty          bool
	}{
		{name: "both empty", empty: true},
		{name: "same keys", prev: stored(a, b), next: []report.Finding{b, a}, empty: true},
		{name: "new only", prev: stored(a), next: []report.Finding{a, c, b},
			new: []string{"CVE-B/zlib/high", "CVE-C/busybox/low"}, newN: report.Counts{High: 1, Low: 1}},
		{name: "resolved only", prev: stored(a, b, c), next: []report.Finding{b},
			resolved: []string{"CVE-A/musl/critical", "CVE-C/busybox/low"}, resolvdN: report.Counts{Critical: 1, Low: 1}},
		{name: "both", prev: stored(a, b), next: []report.Finding{b, c},
			new: []string{"CVE-C/busybox/low"}, resolved: []string{"CVE-A/musl/critical"},
			newN: report.Counts{Low: 1}, resolvdN: report.Counts{Critical: 1}},
		{name: "everything resolved", prev: stored(a), next: nil,
			resolved: []string{"CVE-A/musl/critical"}, resolvdN: report.Counts{Critical: 1}},
		// A changed severity (or fix) of a kept key is no change: the
		// report and report.stored's counts show it.
		{name: "same keys, other severity", prev: stored(a), next: []report.Finding{f("CVE-A", report.Low, "musl")}, empty: true},
		// Another version of the package is another finding.
		{name: "package upgraded", prev: stored(a), next: []report.Finding{{ID: "CVE-A", Severity: report.Critical,
			Package: report.Package{Name: "musl", Version: "1.1", Type: "apk"}}},
			new: []string{"CVE-A/musl/critical"}, resolved: []string{"CVE-A/musl/critical"},
			newN: report.Counts{Critical: 1}, resolvdN: report.Counts{Critical: 1}},
		// The same key twice in one report (one package at two locations)
		// counts once, with its worst severity.
		{name: "duplicate keys", prev: stored(b, f("CVE-B", report.Low, "zlib")), next: []report.Finding{f("CVE-C", report.Medium, "busybox"),
			f("CVE-C", report.High, "busybox")},
			new: []string{"CVE-C/busybox/high"}, resolved: []string{"CVE-B/zlib/high"},
			newN: report.Counts{High: 1}, resolvdN: report.Counts{High: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ch := report.Diff(tc.prev, tc.next)
			if got := ids(ch.New); !slices.Equal(got, tc.new) {
				t.Errorf("new %v, want %v", got, tc.new)
			}
			if got := ids(ch.Resolved); !slices.Equal(got, tc.resolved) {
				t.Errorf("resolved %v, want %v", got, tc.resolved)
			}
			if ch.NewCounts != tc.newN || ch.ResolvedCounts != tc.resolvdN {
				t.Errorf("counts new %+v resolved %+v, want %+v %+v", ch.NewCounts, ch.ResolvedCounts, tc.newN, tc.resolvdN)
			}
			if ch.Empty() != tc.empty || ch.Baseline {
				t.Errorf("Empty() = %v, want %v (baseline %v)", ch.Empty(), tc.empty, ch.Baseline)
			}
		})
	}
}

func TestBaseline(t *testing.T) {
	ch := report.Baseline([]report.Finding{f("CVE-A", report.Critical, "musl"), f("CVE-A", report.Low, "musl"), f("CVE-B", report.Medium, "zlib")})
	if !ch.Baseline || ch.Empty() || len(ch.New) != 0 || len(ch.Resolved) != 0 {
		t.Fatalf("baseline %+v", ch)
	}
	if want := (report.Counts{Critical: 1, Medium: 1}); ch.NewCounts != want || ch.Max() != report.Critical {
		t.Errorf("baseline counts %+v, want %+v", ch.NewCounts, want)
	}
	// A clean image's first report is a baseline too, with no findings.
	if clean := report.Baseline(nil); !clean.Baseline || clean.Empty() || clean.NewCounts != (report.Counts{}) {
		t.Errorf("clean baseline %+v", clean)
	}
}

func TestParseCause(t *testing.T) {
	for _, c := range []string{"scan", "rescan", "rematch"} {
		if got, ok := report.ParseCause(c); !ok || string(got) != c {
			t.Errorf("ParseCause(%q) = %q, %v", c, got, ok)
		}
	}
	for _, c := range []string{"", "Scan", "upload"} {
		if _, ok := report.ParseCause(c); ok {
			t.Errorf("ParseCause(%q) accepted", c)
		}
	}
}
