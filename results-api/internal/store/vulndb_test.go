package store

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/test/support/pgtest"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
)

// countStatements counts the SQL statements gorm runs on st from now on.
// (An internal test: the count is what the batch is for.)
func countStatements(t *testing.T, st *Store) *atomic.Int64 {
	t.Helper()
	var n atomic.Int64
	if err := onStatement(st.db, func(context.Context) { n.Add(1) }); err != nil {
		t.Fatal(err)
	}
	return &n
}

// TestRecordVulnDBsIsOneStatement: recording n unchanged re-matches takes
// n statements one by one and one as a batch, with the same result; a
// digest without a report is returned as missing and nothing else moves.
func TestRecordVulnDBsIsOneStatement(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := Open(ctx, pgtest.NewDatabase(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const n = 200
	digests := make([]string, n)
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for i := range digests {
		digests[i] = fmt.Sprintf("sha256:%064x", i+1)
		r := &report.Report{Raw: []byte(fmt.Sprintf(`{"n":%d}`, i)),
			FindingList: []report.Finding{{ID: "CVE-1", Severity: report.High, Package: report.Package{Name: "musl"}}}}
		r.Digest, r.ScannedAt, r.StoredAt, r.Findings = digests[i], t0, t0, 1
		if _, err := st.PutReport(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	stmts := countStatements(t, st)

	one := VulnDBRecord{Built: "2026-11-20T00:00:00Z", Schema: "v6.1.0", MatchedAt: t0.Add(time.Hour)}
	for _, d := range digests[:n/2] {
		if err := st.RecordVulnDB(ctx, d, one); err != nil {
			t.Fatal(err)
		}
	}
	if got := stmts.Swap(0); got != n/2 {
		t.Errorf("one by one: %d statements for %d reports", got, n/2)
	}

	batch := VulnDBRecord{Built: "2026-11-21T00:00:00Z", Schema: "v6.1.1", MatchedAt: t0.Add(2 * time.Hour)}
	gone := fmt.Sprintf("sha256:%064x", 9999)
	missing, err := st.RecordVulnDBs(ctx, append([]string{gone}, digests[n/2:]...), batch)
	if err != nil {
		t.Fatal(err)
	}
	if got := stmts.Swap(0); got != 1 {
		t.Errorf("batch: %d statements for %d reports, want 1", got, n-n/2)
	}
	if !slices.Equal(missing, []string{gone}) {
		t.Errorf("missing %v, want [%s]", missing, gone)
	}
	for i, d := range digests {
		want := one
		if i >= n/2 {
			want = batch
		}
		sum, err := st.GetSummary(ctx, d)
		if err != nil || sum.DBBuilt != want.Built || sum.DBSchema != want.Schema || !sum.MatchedAt.Equal(want.MatchedAt) ||
			!sum.StoredAt.Equal(t0) || sum.Findings != 1 || len(sum.FindingsFingerprint) != 32 {
			t.Fatalf("%s: %+v, %v", d, sum, err)
		}
	}
	if _, err := st.RecordVulnDBs(ctx, []string{"sha256:nothex"}, batch); err == nil {
		t.Error("an invalid digest was accepted")
	}
	if _, err := st.RecordVulnDBs(ctx, make([]string, MaxVulnDBBatch+1), batch); err == nil {
		t.Error("more than MaxVulnDBBatch digests were accepted")
	}
}
