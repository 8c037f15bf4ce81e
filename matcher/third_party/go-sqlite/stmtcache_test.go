package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	sqlite3 "modernc.org/sqlite/lib"
)

// The tests of the Crowsnest patch (stmtcache.go) run the driver through
// database/sql on a real SQLite file and look inside the connection: which
// statements the cache holds, and every statement SQLite still has prepared
// (sqlite3_next_stmt), so that a leak or a missing reuse is counted, not
// guessed.

func openConn(t *testing.T) (*sql.DB, *sql.Conn) {
	t.Helper()
	db, err := sql.Open(driverName, filepath.Join(t.TempDir(), "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	for _, q := range []string{
		"CREATE TABLE p (id INTEGER PRIMARY KEY, name TEXT NOT NULL, version TEXT NOT NULL)",
		"INSERT INTO p (name, version) VALUES ('busybox', '1.36'), ('openssl', '3.1'), ('zlib', '1.3')",
	} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	return db, conn
}

// inside reports the cached statements by query text, and how many
// statements SQLite holds prepared on the connection.
func inside(t *testing.T, sc *sql.Conn) (cached map[string]uintptr, prepared int) {
	t.Helper()
	cached = map[string]uintptr{}
	err := sc.Raw(func(dc any) error {
		c := dc.(*conn)
		for q, cs := range c.stmts.byQuery {
			cached[q] = cs.pstmt
		}
		for p := sqlite3.Xsqlite3_next_stmt(c.tls, c.db, 0); p != 0; p = sqlite3.Xsqlite3_next_stmt(c.tls, c.db, p) {
			prepared++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return cached, prepared
}

// names reads the one text column of a query's rows: names(t)(conn.QueryContext(...)).
func names(t *testing.T) func(*sql.Rows, error) []string {
	return func(rows *sql.Rows, err error) []string { return readNames(t, rows, err) }
}

func readNames(t *testing.T, rows *sql.Rows, err error) []string {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rows.Close() }()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestCachedStatementIsReusedAndRebound(t *testing.T) {
	_, conn := openConn(t)
	ctx := context.Background()
	const q = "SELECT name FROM p WHERE name >= ? ORDER BY name"
	want := map[string]string{"a": "[busybox openssl zlib]", "c": "[openssl zlib]", "p": "[zlib]", "zz": "[]"}
	var first uintptr
	for i, arg := range []string{"a", "c", "p", "zz", "a"} {
		got := names(t)(conn.QueryContext(ctx, q, arg))
		if fmt.Sprint(got) != want[arg] {
			t.Fatalf("run %d with %q: %v, want %s (a binding kept from an earlier run?)", i, arg, got, want[arg])
		}
		cached, prepared := inside(t, conn)
		if len(cached) != 1 || prepared != 1 {
			t.Fatalf("run %d: %d cached, %d prepared; want the one statement", i, len(cached), prepared)
		}
		if i == 0 {
			first = cached[q]
		} else if cached[q] != first {
			t.Fatalf("run %d prepared the statement again", i)
		}
	}
}

func TestTwoIteratorsOfOneText(t *testing.T) {
	_, conn := openConn(t)
	ctx := context.Background()
	const q = "SELECT name FROM p ORDER BY name"
	outer, err := conn.QueryContext(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if !outer.Next() {
		t.Fatal("no first row")
	}
	// The cached statement is stepping for outer; the same text again gets
	// its own statement, finalized when its rows close.
	inner := names(t)(conn.QueryContext(ctx, q))
	if fmt.Sprint(inner) != "[busybox openssl zlib]" {
		t.Fatalf("inner: %v", inner)
	}
	if _, prepared := inside(t, conn); prepared != 1 {
		t.Fatalf("%d statements prepared while outer reads; want 1 (inner's finalized)", prepared)
	}
	var rest []string
	for outer.Next() {
		var n string
		if err := outer.Scan(&n); err != nil {
			t.Fatal(err)
		}
		rest = append(rest, n)
	}
	if err := outer.Close(); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(rest) != "[openssl zlib]" {
		t.Fatalf("outer after inner ran: %v", rest)
	}
}

func TestCacheIsBoundedAndLeaksNothing(t *testing.T) {
	_, conn := openConn(t)
	ctx := context.Background()
	// The first text stays open while stmtCacheSize others push it out.
	held, err := conn.QueryContext(ctx, "SELECT name FROM p WHERE id > 0 ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	for i := range stmtCacheSize + 40 {
		q := fmt.Sprintf("SELECT name FROM p WHERE id = %d", i%3+1)
		if i >= 3 {
			q = fmt.Sprintf("SELECT name FROM p WHERE id = %d AND %d = %d", i%3+1, i, i)
		}
		if got := names(t)(conn.QueryContext(ctx, q)); len(got) != 1 {
			t.Fatalf("%s: %v", q, got)
		}
	}
	cached, prepared := inside(t, conn)
	if len(cached) != stmtCacheSize || prepared != stmtCacheSize+1 {
		t.Fatalf("%d cached, %d prepared; want %d cached plus the evicted one still read", len(cached), prepared, stmtCacheSize)
	}
	if got := names(t)(held, nil); fmt.Sprint(got) != "[busybox openssl zlib]" {
		t.Fatalf("the evicted statement's rows: %v", got)
	}
	if _, prepared := inside(t, conn); prepared != stmtCacheSize {
		t.Fatalf("%d prepared after the evicted statement's rows closed; want %d", prepared, stmtCacheSize)
	}
}

func TestExecDropsCachedStatements(t *testing.T) {
	_, conn := openConn(t)
	ctx := context.Background()
	const q = "SELECT * FROM p ORDER BY id"
	cols := func() []string {
		rows, err := conn.QueryContext(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = rows.Close() }()
		c, err := rows.Columns()
		if err != nil {
			t.Fatal(err)
		}
		vals := make([]any, len(c))
		for i := range vals {
			vals[i] = new(any)
		}
		for rows.Next() {
			if err := rows.Scan(vals...); err != nil {
				t.Fatal(err)
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return c
	}
	if got := fmt.Sprint(cols()); got != "[id name version]" {
		t.Fatal(got)
	}
	if _, err := conn.ExecContext(ctx, "ALTER TABLE p ADD COLUMN purl TEXT NOT NULL DEFAULT ''"); err != nil {
		t.Fatal(err)
	}
	if cached, _ := inside(t, conn); len(cached) != 0 {
		t.Fatalf("%d statements still cached after an exec", len(cached))
	}
	if got := fmt.Sprint(cols()); got != "[id name version purl]" {
		t.Fatalf("columns after ALTER: %s", got)
	}
}

func TestCanceledQueryLeavesTheCacheUsable(t *testing.T) {
	db, conn := openConn(t)
	ctx := context.Background()
	const q = "SELECT name FROM p WHERE name <> ? ORDER BY name"
	_ = names(t)(conn.QueryContext(ctx, q, "x"))
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	// database/sql either refuses it or closes its rows when it sees the
	// context done; whichever, the statement must go back to the cache.
	if rows, err := conn.QueryContext(canceled, q, "x"); err == nil {
		for rows.Next() {
		}
		_ = rows.Close()
	} else if !errors.Is(err, context.Canceled) {
		t.Logf("canceled query: %v", err)
	}
	if got := names(t)(conn.QueryContext(ctx, q, "openssl")); fmt.Sprint(got) != "[busybox zlib]" {
		t.Fatalf("after a canceled query: %v", got)
	}
	// A query that fails while binding releases its statement too.
	if _, err := conn.QueryContext(ctx, q, struct{}{}); err == nil {
		t.Fatal("a query with an unbindable argument ran")
	}
	if got := names(t)(conn.QueryContext(ctx, q, "zlib")); fmt.Sprint(got) != "[busybox openssl]" {
		t.Fatalf("after a failed bind: %v", got)
	}
	if _, prepared := inside(t, conn); prepared != 1 {
		t.Fatalf("%d statements prepared; want 1", prepared)
	}
	// Several connections at once (database/sql's pool), each with its cache.
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			for range 50 {
				rows, err := db.QueryContext(ctx, q, "busybox")
				if err != nil {
					errs <- err
					return
				}
				n := 0
				for rows.Next() {
					n++
				}
				if err := rows.Close(); err != nil || n != 2 {
					errs <- fmt.Errorf("%d rows, %w", n, err)
					return
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
