package store

import (
	"context"
	"io/fs"
	"reflect"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/crowsnest-dev/crowsnest/test/support/pgtest"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
)

// TestLifecycleBackfill stores a digest's history with the lifecycle kept
// live, then undoes the migrations down to 00008 (00012's down puts the
// open keys back into finding_lifecycle, 00009's drops it) and applies
// them all again: 00009's backfill, from reports.created_at and the
// recorded changes, must find the same first sightings, KEV listings and
// resolutions as the live path did, and 00012 leave each key in one place.
func TestLifecycleBackfill(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dsn := pgtest.NewDatabase(t)
	st, err := Open(ctx, dsn, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	t0 := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	f := func(id string, sev report.Severity, kev bool) report.Finding {
		return report.Finding{ID: id, Severity: sev, Package: report.Package{Name: "p-" + id, Version: "1", Type: "apk"},
			Risk: report.Risk{KEV: kev}}
	}
	a, b, c, d := f("CVE-A", report.Critical, false), f("CVE-B", report.High, false), f("CVE-C", report.Medium, false), f("CVE-D", report.Low, false)
	steps := []struct {
		days int
		fs   []report.Finding
	}{
		{0, []report.Finding{a, b, d}},
		{5, []report.Finding{a, c}},                                     // b and d resolved, c new
		{8, []report.Finding{a, b, c}},                                  // b back
		{12, []report.Finding{f("CVE-A", report.Critical, true), b, c}}, // a listed in KEV
	}
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for i, s := range steps {
		r := &report.Report{Raw: []byte{byte('0' + i)}, FindingList: s.fs}
		r.Digest, r.Image, r.StoredAt = digest, "app", t0.Add(time.Duration(s.days)*report.Day)
		r.ScannedAt, r.Findings = r.StoredAt, len(s.fs)
		if _, err := st.PutReport(ctx, r); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	live, err := st.FindingLifecycle(ctx, digest)
	if err != nil || len(live) != 4 {
		t.Fatalf("live lifecycle %+v, %v: want 4 keys", live, err)
	}

	sub, _ := fs.Sub(migrations, "migrations")
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	db := stdlib.OpenDB(*cfg)
	defer db.Close()
	p, err := goose.NewProvider(goose.DialectPostgres, db, sub)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.DownTo(ctx, 8); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatal(err)
	}
	backfilled, err := st.FindingLifecycle(ctx, digest)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(backfilled, live) {
		t.Errorf("backfilled lifecycle\n%+v\nwant as kept live\n%+v", backfilled, live)
	}
	var rows []findingRow
	if err := st.db.WithContext(ctx).Where("digest = ?", digest).Order("vuln_id").Find(&rows).Error; err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		for _, l := range live {
			if l.ID == r.VulnID && (!r.FirstSeen.Equal(l.Seen.FirstSeen) || !utc(r.KEVSince).Equal(l.Seen.KEVSince)) {
				t.Errorf("findings row %s first seen %v, KEV since %v; want %+v", r.VulnID, r.FirstSeen, r.KEVSince, l.Seen)
			}
		}
	}
}
