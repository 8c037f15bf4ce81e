package report_test

import (
	"slices"
	"testing"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
)

// kev returns f listed in CISA KEV, with an EPSS score.
func kev(f report.Finding) report.Finding {
	e := 0.9
	f.Risk = report.Risk{KEV: true, EPSS: &e, Score: 80}
	return f
}

// TestDiffKEVAdded: a key in both reports that gains a CISA KEV listing is
// a change (KEVAdded, counted, worst first with KEV-listed findings before
// others of a severity); one that had it already, loses it, or is new
// (listed under New, not twice) is not.
func TestDiffKEVAdded(t *testing.T) {
	a, b, c := f("CVE-A", report.Critical, "musl"), f("CVE-B", report.High, "zlib"), f("CVE-C", report.High, "busybox")
	for _, tc := range []struct {
		name     string
		prev     []report.ChangedFinding
		next     []report.Finding
		kevAdded []string
		new      []string
		empty    bool
	}{
		{name: "listing added", prev: stored(a, b), next: []report.Finding{a, kev(b)}, kevAdded: []string{"CVE-B/zlib/high"}},
		{name: "listed already", prev: stored(a, kev(b)), next: []report.Finding{a, kev(b)}, empty: true},
		{name: "listing removed", prev: stored(kev(a)), next: []report.Finding{a}, empty: true},
		{name: "new and listed", prev: stored(a), next: []report.Finding{a, kev(c)}, new: []string{"CVE-C/busybox/high"}},
		{name: "worst first", prev: stored(a, b, c), next: []report.Finding{kev(c), kev(b), kev(a)},
			kevAdded: []string{"CVE-A/musl/critical", "CVE-B/zlib/high", "CVE-C/busybox/high"}},
		// The same key twice: the KEV-listed one stands for it.
		{name: "duplicate key, one listed", prev: stored(b), next: []report.Finding{b, kev(b)}, kevAdded: []string{"CVE-B/zlib/high"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ch := report.Diff(tc.prev, tc.next)
			if got := ids(ch.KEVAdded); !slices.Equal(got, tc.kevAdded) {
				t.Errorf("kevAdded %v, want %v", got, tc.kevAdded)
			}
			if ch.KEVAddedCount != len(tc.kevAdded) {
				t.Errorf("KEVAddedCount %d, want %d", ch.KEVAddedCount, len(tc.kevAdded))
			}
			if got := ids(ch.New); !slices.Equal(got, tc.new) {
				t.Errorf("new %v, want %v", got, tc.new)
			}
			if ch.Empty() != tc.empty {
				t.Errorf("Empty() = %v, want %v", ch.Empty(), tc.empty)
			}
			for _, k := range ch.KEVAdded {
				if !k.Risk.KEV || k.Risk.EPSS == nil || k.Risk.Score != 80 {
					t.Errorf("kevAdded %s carries risk %+v, want the next report's", k.ID, k.Risk)
				}
			}
		})
	}
	// A kevAdded-only change names its worst severity.
	if ch := report.Diff(stored(b), []report.Finding{kev(b)}); ch.Max() != report.High {
		t.Errorf("Max() = %v, want high", ch.Max())
	}
}

// TestSortChangedKEVFirst: at equal severity a KEV-listed finding sorts
// before one that is not, whatever their ids.
func TestSortChangedKEVFirst(t *testing.T) {
	fs := stored(f("CVE-1", report.High, "a"), kev(f("CVE-2", report.High, "b")), f("CVE-0", report.Critical, "c"))
	report.SortChanged(fs)
	if got, want := ids(fs), []string{"CVE-0/c/critical", "CVE-2/b/high", "CVE-1/a/high"}; !slices.Equal(got, want) {
		t.Errorf("sorted %v, want %v", got, want)
	}
}
