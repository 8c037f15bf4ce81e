package ingest_test

import (
	"errors"
	"testing"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/bomtest"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/ingest"
)

// FuzzIngest: any input is either a report whose counts add up or one of
// the documented input errors; it never panics.
func FuzzIngest(f *testing.F) {
	f.Add(constructedBOM())
	f.Add(bomtest.BOM())
	f.Add([]byte(`{"bomFormat":"CycloneDX","specVersion":"1.6","vulnerabilities":[{"id":"X","affects":[{"ref":"nope"}]}]}`))
	f.Add([]byte(`{"bomFormat":"CycloneDX","specVersion":"1.6","vulnerabilities":[{"id":"X","ratings":[{"severity":"none"}],"affects":[{"ref":"r","versions":[{"range":"vers:apk/>=","status":"unaffected"}]}]}]}`))
	f.Add([]byte(`{"spdxVersion":"SPDX-2.3"}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ingest.Parse(b, opts)
		if err != nil {
			for _, e := range []error{ingest.ErrNotJSON, ingest.ErrNotCycloneDX, ingest.ErrInvalidBOM} {
				if errors.Is(err, e) {
					return
				}
			}
			t.Fatalf("undocumented error: %v", err)
		}
		c := r.Counts
		if sum := c.Critical + c.High + c.Medium + c.Low + c.Negligible + c.Unknown; sum != r.Findings || r.Findings != len(r.FindingList) {
			t.Fatalf("counts %+v do not add up to %d findings", c, r.Findings)
		}
		if r.Fixable > r.Findings {
			t.Fatalf("fixable %d > findings %d", r.Fixable, r.Findings)
		}
	})
}
