package store

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/test/support/pgtest"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
)

// TestStartLifecycleMatchesTouch: for a digest without lifecycle rows,
// startLifecycle (Go and COPY) leaves the same rows and returns the same
// sightings as touchLifecycle (INSERT … ON CONFLICT … RETURNING), over
// random finding lists with keys listed twice at different severities and
// KEV on some of the copies only.
func TestStartLifecycleMatchesTouch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, err := Open(ctx, pgtest.NewDatabase(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sqlDB, err := st.db.DB()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := sqlDB.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	at := time.Date(2026, 11, 30, 10, 0, 0, 123456789, time.UTC) // nanoseconds: stored to the microsecond
	for i := range 40 {
		var fs []report.Finding
		for range rng.IntN(30) {
			id := fmt.Sprintf("CVE-%d", rng.IntN(12))
			f := report.Finding{ID: id, Severity: report.Severity(rng.IntN(6)),
				Package: report.Package{Name: fmt.Sprintf("p%d", rng.IntN(3)), Version: "1", Type: "apk"},
				Risk:    report.Risk{KEV: rng.IntN(4) == 0}}
			fs = append(fs, f)
		}
		var seen [2]map[lifecycleKey]report.Seen
		var rows [2][]string
		for j, write := range []func(context.Context, *sql.Conn, string, time.Time, []report.Finding) (map[lifecycleKey]report.Seen, error){startLifecycle, touchLifecycle} {
			d := fmt.Sprintf("sha256:%063x%d", i, j)
			r := &report.Report{Raw: []byte(d)}
			r.Digest, r.Image, r.StoredAt, r.ScannedAt = d, "app", at, at
			if _, err := st.PutReport(ctx, r); err != nil { // no findings: no lifecycle rows
				t.Fatal(err)
			}
			if seen[j], err = write(ctx, conn, d, at, fs); err != nil {
				t.Fatal(err)
			}
			var got []string
			if err := st.db.WithContext(ctx).Raw(`SELECT concat_ws(' ', vuln_id, pkg_name, pkg_version, pkg_type, severity, first_seen, kev_since, resolved_at)
 FROM finding_lifecycle WHERE digest = ? ORDER BY vuln_id, pkg_name, pkg_version, pkg_type`, d).Scan(&got).Error; err != nil {
				t.Fatal(err)
			}
			rows[j] = got
		}
		if !reflect.DeepEqual(rows[0], rows[1]) {
			t.Fatalf("list %d (%d findings): rows\nstart %q\ntouch %q", i, len(fs), rows[0], rows[1])
		}
		for k, s := range seen[1] {
			// touch returns Postgres's microseconds; the rows agree above.
			if got := seen[0][k]; !got.FirstSeen.Truncate(time.Microsecond).Equal(s.FirstSeen) || !got.KEVSince.Truncate(time.Microsecond).Equal(s.KEVSince) {
				t.Fatalf("list %d: %v seen %+v by start, %+v by touch", i, k, got, s)
			}
		}
		if len(seen[0]) != len(seen[1]) {
			t.Fatalf("list %d: %d keys by start, %d by touch", i, len(seen[0]), len(seen[1]))
		}
	}
}
