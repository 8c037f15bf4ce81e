package vulnmetrics_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/test/support/pgtest"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/store/storetest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// now is the refresher's clock in these tests: report changes are dated
// relative to it.
var now = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)

const day = 24 * time.Hour

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func open(t *testing.T) (*store.Store, *storetest.ErrLog) { return storetest.Open(t) }

func digest(n int) string { return fmt.Sprintf("sha256:%064x", n) }

// vuln is a finding of id in package pkg (version 1.0, apk).
func vuln(id string, sev report.Severity, pkg string) report.Finding {
	return report.Finding{ID: id, Source: "alpine-distro", Severity: sev,
		Package: report.Package{Name: pkg, Version: "1.0", Type: "apk", PURL: "pkg:apk/alpine/" + pkg + "@1.0"}}
}

// put stores digest n's report with findings fs as stored at; each call
// with other findings replaces the report (a rescan), recording the change.
func put(t *testing.T, st *store.Store, n int, at time.Time, fs ...report.Finding) {
	t.Helper()
	r := &report.Report{FindingList: fs, Raw: fmt.Appendf(nil, "bom %d %s %v", n, at, fs)}
	r.Digest, r.Image, r.ScannedAt, r.StoredAt = digest(n), fmt.Sprintf("registry.example/app%d", n), at, at
	r.GrypeVersion, r.DBBuilt, r.DBSchema = "0.121.2", "2026-11-01T00:00:00Z", "v6.0.2"
	for _, f := range fs {
		r.Counts.Add(f.Severity)
	}
	r.Findings = len(fs)
	if _, err := st.PutReport(ctx(t), r); err != nil {
		t.Fatalf("put %s: %v", r.Digest, err)
	}
}

// run is one workload of an inventory running digest n.
func run(name string, n int) store.InventoryEntry {
	return store.InventoryEntry{Kind: "Deployment", Name: name, Container: "app", Digest: digest(n), Image: "img-" + name, Pods: 1}
}

// apply applies namespace ns's inventory snapshot (seq orders snapshots
// of one namespace).
func apply(t *testing.T, st *store.Store, ns string, seq int, entries ...store.InventoryEntry) {
	t.Helper()
	ok, err := st.ApplyInventory(ctx(t), store.Inventory{Namespace: ns, Entries: entries,
		EventID: fmt.Sprintf("%s-%d", ns, seq), Time: now.Add(time.Duration(seq) * time.Minute)})
	if err != nil || !ok {
		t.Fatalf("apply %s #%d: applied %v, %v", ns, seq, ok, err)
	}
}

func scan(t *testing.T, st *store.Store, n int, state report.ScanState) {
	t.Helper()
	_, err := st.ApplyScan(ctx(t), report.ScanStatus{Digest: digest(n), Image: fmt.Sprintf("registry.example/app%d", n),
		Namespace: "gamma", Job: fmt.Sprintf("scan-%d", n), State: state, Attempt: 1, UpdatedAt: now.Add(-time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
}
