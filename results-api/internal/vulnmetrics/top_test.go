package vulnmetrics

import (
	"slices"
	"testing"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
)

// top re-ranks the store's top once exceptions lowered some counts: by
// images, then the worst, ties in the store's order; ids left in no
// image go; at most the limit.
func TestTopAfterSuppression(t *testing.T) {
	v := func(id string, sev report.Severity, images int) store.TopVulnerability {
		return store.TopVulnerability{ID: id, Severity: sev, Images: images}
	}
	for _, tc := range []struct {
		name    string
		in      []store.TopVulnerability
		limit   int
		wantIDs []string
	}{
		{"unchanged order is kept", []store.TopVulnerability{v("A", report.High, 3), v("B", report.Critical, 2), v("C", report.Low, 2)}, 20, []string{"A", "B", "C"}},
		{"a lowered id falls", []store.TopVulnerability{v("A", report.High, 1), v("B", report.Critical, 2), v("C", report.Low, 2)}, 20, []string{"B", "C", "A"}},
		{"ties: worse first, then the store's order", []store.TopVulnerability{v("B", report.Low, 2), v("A", report.Low, 2), v("C", report.Critical, 2)}, 20, []string{"C", "B", "A"}},
		{"suppressed everywhere: gone", []store.TopVulnerability{v("A", report.High, 0), v("B", report.High, 1)}, 20, []string{"B"}},
		{"the slack beyond the limit is cut", []store.TopVulnerability{v("A", report.High, 0), v("B", report.High, 3), v("C", report.High, 2), v("D", report.High, 1)}, 2, []string{"B", "C"}},
	} {
		var got []string
		for _, x := range top(slices.Clone(tc.in), tc.limit) {
			got = append(got, x.ID)
		}
		if !slices.Equal(got, tc.wantIDs) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.wantIDs)
		}
	}
}
