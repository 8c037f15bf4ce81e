package ingest_test

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/ingest"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
)

// rated is the manifest's record, from Grype's own JSON output, of a
// finding Grype rated (hack/tools/grype/cmd/fixtures).
type rated struct {
	ID, PURL string
	Risk     float64
	EPSS     float64
	KEV      bool
	// Ransomware is CISA's knownRansomwareCampaignUse.
	Ransomware string
}

type riskFixture struct {
	Name, File string
	Synthetic  bool
	Findings   int
	KEV, EPSS  int
	Rated      []rated
}

// TestParseRiskOfRealGrypeOutput parses every Grype fixture (real Grype
// 0.121 output against the project's DB, which carries KEV and EPSS rows)
// and checks each finding against Grype's JSON output of the same scan:
// every finding Grype rated has its EPSS score, KEV listing and risk score,
// exactly; every other finding has none.
func TestParseRiskOfRealGrypeOutput(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "grype")
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatalf("Grype fixtures: %v (regenerate with `make fixtures`)", err)
	}
	var m struct{ Fixtures []riskFixture }
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	var kevSeen, ratedSeen int
	for _, fx := range m.Fixtures {
		t.Run(fx.Name, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join(dir, fx.File))
			if err != nil {
				t.Fatal(err)
			}
			r, err := ingest.Parse(raw, opts)
			if err != nil {
				t.Fatal(err)
			}
			var kev, epss int
			for _, f := range r.FindingList {
				if f.Risk.KEV {
					kev++
				}
				if f.Risk.EPSS != nil {
					epss++
				}
			}
			if kev != fx.KEV || epss != fx.EPSS {
				t.Errorf("KEV %d, EPSS %d findings; Grype says %d, %d", kev, epss, fx.KEV, fx.EPSS)
			}
			if fx.Synthetic {
				return
			}
			want := map[[2]string]rated{}
			for _, w := range fx.Rated {
				want[[2]string{w.ID, w.PURL}] = w
			}
			for _, f := range r.FindingList {
				key := [2]string{f.ID, f.Package.PURL}
				w, ok := want[key]
				if !ok {
					if f.Risk != (report.Risk{}) {
						t.Errorf("%s in %s: risk %+v, Grype rated it 0", f.ID, f.Package.PURL, f.Risk)
					}
					continue
				}
				delete(want, key)
				ratedSeen++
				if w.KEV {
					kevSeen++
				}
				if f.Risk.KEV != w.KEV || f.Risk.EPSS == nil || *f.Risk.EPSS != w.EPSS {
					t.Errorf("%s in %s: KEV %v EPSS %v; Grype: KEV %v EPSS %v", f.ID, f.Package.PURL, f.Risk.KEV, f.Risk.EPSS, w.KEV, w.EPSS)
				}
				if !strings.EqualFold(w.Ransomware, "known") && math.Abs(f.Risk.Score-w.Risk) > 1e-9 {
					t.Errorf("%s in %s: risk %v, Grype %v", f.ID, f.Package.PURL, f.Risk.Score, w.Risk)
				}
			}
			for k := range want {
				t.Errorf("Grype rated %s in %s; the parse has no such finding", k[0], k[1])
			}
		})
	}
	if ratedSeen == 0 || kevSeen == 0 {
		t.Fatalf("fixtures rate %d findings, %d KEV-listed: regenerate them with `make fixtures` (the DB carries KEV and EPSS rows)", ratedSeen, kevSeen)
	}
}
