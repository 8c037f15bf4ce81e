package store_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/test/support/pgtest"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/ingest"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
)

// debianFixture is real Grype output (testdata/grype): 18 findings, one
// KEV-listed (CVE-2023-4911 in libc6, risk 78.75), seven with EPSS.
func debianFixture(t *testing.T, n int) *report.Report {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "testdata", "grype", "debian.cdx.json"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := ingest.Parse(raw, ingest.Options{Digest: digest(n), Image: "reg/debian@" + digest(n), Now: t0.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func parseStored(digest string, raw []byte) ([]report.Finding, error) {
	r, err := ingest.Parse(raw, ingest.Options{Digest: digest, Now: time.Now(), MaxFindings: 1 << 30})
	if err != nil {
		return nil, err
	}
	return r.FindingList, nil
}

// TestBackfillRisk: reports stored before the risk columns existed (their
// columns reset to the migration's defaults) get them from their stored
// BOMs, once; the findings then sort by risk and filter on KEV and EPSS.
func TestBackfillRisk(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	st, errs := openDSN(t, dsn, nil)
	put(t, st, debianFixture(t, 1))
	put(t, st, debianFixture(t, 2))
	put(t, st, newReport(3, "reg/plain@"+digest(3), t0, `{}`, finding("CVE-A", report.High, "musl", "")))
	conn := connect(t, dsn)
	for _, q := range []string{
		`UPDATE findings SET epss = NULL, kev = false, risk = 0`,
		`UPDATE reports SET kev = 0, max_risk = 0, risk_parsed = false WHERE digest <> '` + digest(3) + `'`,
	} {
		if _, err := conn.Exec(ctx(t), q); err != nil {
			t.Fatal(err)
		}
	}
	if sum, _ := st.GetSummary(ctx(t), digest(1)); sum.KEV != 0 {
		t.Fatalf("reset left KEV %d", sum.KEV)
	}

	n, err := st.BackfillRisk(ctx(t), parseStored, 1)
	if err != nil || n != 2 {
		t.Fatalf("backfill: %d reports, %v; want 2", n, err)
	}
	if n, err := st.BackfillRisk(ctx(t), parseStored, 1); err != nil || n != 0 {
		t.Fatalf("second backfill: %d reports, %v; want 0", n, err)
	}
	for _, d := range []string{digest(1), digest(2)} {
		page, err := st.GetReport(ctx(t), d, store.FindingQuery{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		if page.KEV != 1 || page.MaxRisk != 78.75000000000001 {
			t.Errorf("%s: KEV %d max risk %v, want 1 and Grype's 78.75", d, page.KEV, page.MaxRisk)
		}
		f := page.FindingList[0]
		if f.ID != "CVE-2023-4911" || !f.Risk.KEV || f.Risk.EPSS == nil || *f.Risk.EPSS != 0.78 {
			t.Errorf("%s: first finding by risk %s %+v, want CVE-2023-4911, KEV, EPSS 0.78", d, f.ID, f.Risk)
		}
		rated := 0
		for i, f := range page.FindingList {
			if f.Risk.EPSS != nil {
				rated++
			}
			if i > 0 && f.Risk.Score > page.FindingList[i-1].Risk.Score {
				t.Errorf("%s: finding %d risk %v after %v", d, i, f.Risk.Score, page.FindingList[i-1].Risk.Score)
			}
		}
		if rated != 7 {
			t.Errorf("%s: %d findings with EPSS after the backfill, want 7", d, rated)
		}
	}
	// The backfilled findings and a fresh upload's agree, fingerprint too:
	// the same upload again keeps the rows.
	if res := put(t, st, func() *report.Report { r := debianFixture(t, 1); r.Raw = append(r.Raw, ' '); return r }()); !res.FindingsKept {
		t.Errorf("a fresh parse of the same findings rewrote the backfilled rows: fingerprints differ")
	}

	kev, epss := store.RiskFilter{KEV: true}, 0.5
	if page, _ := st.GetReport(ctx(t), digest(1), store.FindingQuery{Limit: 100, Risk: kev}); len(page.FindingList) != 1 {
		t.Errorf("kev filter: %d findings, want 1", len(page.FindingList))
	}
	if page, _ := st.GetReport(ctx(t), digest(1), store.FindingQuery{Limit: 100, Risk: store.RiskFilter{MinEPSS: &epss}}); len(page.FindingList) != 1 {
		t.Errorf("minEpss 0.5: %d findings, want 1", len(page.FindingList))
	}
	list, err := st.ListReports(ctx(t), store.ListQuery{Limit: 10, Sort: "-risk"})
	if err != nil || len(list.Items) != 3 || list.Items[2].Digest != digest(3) {
		t.Fatalf("list by risk: %+v, %v", list, err)
	}
	if list, _ := st.ListReports(ctx(t), store.ListQuery{Limit: 10, Risk: kev}); list.Total != 2 {
		t.Errorf("list kev: %d reports, want 2", list.Total)
	}
	if got := errs.List(); len(got) != 0 {
		t.Errorf("database errors: %v", got)
	}
}
