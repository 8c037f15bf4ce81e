package store_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/test/support/pgtest"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/store/storetest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// errLog records the operations the store reported as failed.
type errLog = storetest.ErrLog

// open returns a store on a fresh database (migrations applied) and its
// error log.
func open(t *testing.T) (*store.Store, *errLog) { return storetest.Open(t) }

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

var t0 = time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)

func digest(n int) string { return fmt.Sprintf("sha256:%064x", n) }

func score(f float64) *float64 { return &f }

// finding builds one finding; fixed "" means no fix.
func finding(id string, sev report.Severity, pkg, fixed string) report.Finding {
	f := report.Finding{ID: id, Source: "alpine-distro", Severity: sev, CVSSScore: score(float64(sev) * 1.9),
		CVSSVector: "CVSS:3.1/AV:N", Package: report.Package{Name: pkg, Version: "1.0", Type: "apk",
			PURL: "pkg:apk/alpine/" + pkg + "@1.0"}, Description: "d " + id, URL: "https://example.invalid/" + id}
	if fixed != "" {
		f.FixedIn = []string{fixed}
	}
	return f
}

// newReport builds a report as ingest.Parse would: counts and fixable
// derived from the findings; raw is the "original bytes".
func newReport(n int, image string, scanned time.Time, raw string, fs ...report.Finding) *report.Report {
	r := &report.Report{Raw: []byte(raw), FindingList: fs}
	r.Digest, r.Image, r.ScannedAt, r.StoredAt = digest(n), image, scanned, scanned.Add(time.Minute)
	r.GrypeVersion, r.DBBuilt, r.DBSchema = "0.121.2", "2026-11-01T00:00:00Z", "v6.0.2"
	for _, f := range fs {
		r.Counts.Add(f.Severity)
		if f.Fixable() {
			r.Fixable++
		}
	}
	r.Findings = len(fs)
	return r
}

func put(t *testing.T, st *store.Store, r *report.Report) store.PutResult {
	t.Helper()
	res, err := st.PutReport(ctx(t), r)
	if err != nil {
		t.Fatalf("put %s: %v", r.Digest, err)
	}
	return res
}

// readBOM reads a whole BOM through OpenBOM.
func readBOM(st *store.Store, d string) ([]byte, error) {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := st.OpenBOM(c, d)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err == nil && int64(len(b)) != r.Size {
		err = fmt.Errorf("read %d bytes, size says %d", len(b), r.Size)
	}
	return b, err
}
