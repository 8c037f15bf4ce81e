package store_test

import (
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
	"github.com/crowsnest-dev/crowsnest/test/support/pgtest"
)

// A report's findings go with it, however the report is deleted: by
// DeleteReport, and by any statement that deletes reports (retention
// deletes many at once). Migration 00013 replaced the findings' foreign
// key, checked on every inserted row, with a statement trigger on
// reports; this is what the key's ON DELETE CASCADE guaranteed.
func TestFindingsGoWithTheirReport(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	st, err := store.Open(ctx(t), dsn, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for n := 1; n <= 4; n++ {
		put(t, st, newReport(n, "img", t0, "raw", finding("CVE-1", 4, "p", ""), finding("GHSA-aaaa-bbbb-cccc", 3, "q", "")))
	}
	conn, err := pgx.Connect(ctx(t), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx(t))
	count := func(where string, args ...any) int {
		t.Helper()
		var n int
		if err := conn.QueryRow(ctx(t), "SELECT count(*) FROM findings f WHERE "+where, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count("true"); n != 8 {
		t.Fatalf("%d findings rows stored, want 8", n)
	}
	if _, err := st.DeleteReport(ctx(t), digest(1)); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx(t), "DELETE FROM reports WHERE digest = ANY($1)", []string{digest(2), digest(3)}); err != nil {
		t.Fatal(err)
	}
	if n := count("digest <> $1", digest(4)); n != 0 {
		t.Errorf("%d findings rows of deleted reports left", n)
	}
	if n := count("digest = $1", digest(4)); n != 2 {
		t.Errorf("%d findings rows of the report kept, want 2", n)
	}
}
