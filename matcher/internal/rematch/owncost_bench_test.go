package rematch

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	cdx "github.com/CycloneDX/cyclonedx-go"

	"github.com/crowsnest-dev/crowsnest/api/finding"
)

// BenchmarkOwnCost times, on one matched 120-package report, what a pass
// did per report besides Grype before (a full JSON check, the stored BOM
// decoded for its findings, the output encoded) and does now (the check
// of the first members, the output's fingerprint): the fixed cost per
// report, without Grype's matching or its own parses of the BOM.
func BenchmarkOwnCost(b *testing.B) {
	m := openDB(b, writeDB(b, benchAdvisories(3_000), fixtureBuilt))
	in := fleetSBOM(b, 1, 120, 0.8)
	stored, _, err := m.Match(context.Background(), in)
	if err != nil {
		b.Fatal(err)
	}
	out, err := m.MatchOutput(context.Background(), stored)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("report of %d bytes", len(stored))
	b.Run("before", func(b *testing.B) {
		for b.Loop() {
			var head struct {
				BOMFormat   string `json:"bomFormat"`
				SpecVersion string `json:"specVersion"`
			}
			if err := json.Unmarshal(stored, &head); err != nil {
				b.Fatal(err)
			}
			var bom cdx.BOM
			if err := json.Unmarshal(stored, &bom); err != nil {
				b.Fatal(err)
			}
			prev := FindingsOf(&bom)
			enc, err := out.Encode()
			if err != nil || !SameFindings(prev, out.Findings()) || !bytes.HasPrefix(enc, []byte("{")) {
				b.Fatal("unexpected", err)
			}
		}
	})
	b.Run("after", func(b *testing.B) {
		for b.Loop() {
			if err := checkCycloneDX(stored); err != nil {
				b.Fatal(err)
			}
			fs, err := finding.Of(out.bom, 0)
			if err != nil || len(finding.Fingerprint(fs)) != 32 {
				b.Fatal(err)
			}
		}
	})
}
