package store_test

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/crowsnest-dev/crowsnest/test/support/pgtest"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
)

// TestConcurrentMigrations starts four replicas at once on one fresh
// database: every one opens, and the schema is migrated exactly once
// (goose records each version once; without the migration lock two of them
// race to create goose's table and the first tables, and fail).
func TestConcurrentMigrations(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	const replicas = 4
	start := make(chan struct{})
	errs := make([]error, replicas)
	var wg sync.WaitGroup
	for i := range replicas {
		wg.Go(func() {
			<-start
			st, err := store.Open(ctx(t), dsn, store.Options{})
			if err == nil {
				err = st.Close()
			}
			errs[i] = err
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("replica %d: %v", i, err)
		}
	}

	conn := connect(t, dsn)
	rows, err := conn.Query(ctx(t), `SELECT version_id, count(*) FROM goose_db_version GROUP BY version_id ORDER BY version_id`)
	if err != nil {
		t.Fatal(err)
	}
	got := map[int64]int64{}
	for rows.Next() {
		var v, n int64
		if err := rows.Scan(&v, &n); err != nil {
			t.Fatal(err)
		}
		got[v] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	// Each migration file's version once, and goose's 0.
	files, err := filepath.Glob(filepath.Join("migrations", "*.sql"))
	if err != nil || len(files) < 11 {
		t.Fatalf("migration files %v, %v", files, err)
	}
	want := map[int64]int64{0: 1}
	for _, f := range files {
		v, err := strconv.ParseInt(strings.SplitN(filepath.Base(f), "_", 2)[0], 10, 64)
		if err != nil {
			t.Fatalf("migration file %s: %v", f, err)
		}
		want[v] = 1
	}
	if len(got) != len(want) {
		t.Errorf("goose versions %v, want each of 0..%d once", got, len(files))
	}
	for v, n := range want {
		if got[v] != n {
			t.Errorf("goose versions %v, want each of 0..%d once", got, len(files))
			break
		}
	}
	for _, table := range []string{"reports", "report_boms", "findings", "scans", "event_outbox", "report_changes", "report_change_findings", "inventory", "inventory_namespaces", "digest_runtime"} {
		var ok bool
		if err := conn.QueryRow(ctx(t), `SELECT to_regclass($1) IS NOT NULL`, table).Scan(&ok); err != nil || !ok {
			t.Errorf("table %s missing (%v)", table, err)
		}
	}
	// The schema works: a report goes in and comes out.
	st, _ := openDSN(t, dsn, nil)
	put(t, st, newReport(1, "reg/app@"+digest(1), t0, `{}`))
	if _, err := st.GetSummary(ctx(t), digest(1)); err != nil {
		t.Fatal(err)
	}
}

// TestMigrationWaitsForTheLock: while another session holds the migration
// lock (a replica migrating), Open waits; it goes on once the lock is free.
func TestMigrationWaitsForTheLock(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	holder := connect(t, dsn)
	if _, err := holder.Exec(ctx(t), `SELECT pg_advisory_lock($1)`, store.MigrationLockKey); err != nil {
		t.Fatal(err)
	}
	opened := make(chan error, 1)
	go func() {
		st, err := store.Open(ctx(t), dsn, store.Options{})
		if err == nil {
			err = st.Close()
		}
		opened <- err
	}()
	// The waiter is visible in pg_locks: an advisory lock not granted.
	deadline := time.Now().Add(10 * time.Second)
	for {
		var waiting int
		if err := holder.QueryRow(ctx(t), `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
 AND classid = $1 AND objid = $2`, uint32(store.MigrationLockKey>>32), uint32(store.MigrationLockKey&0xffffffff)).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Open is not waiting for the migration lock")
		}
		time.Sleep(20 * time.Millisecond)
	}
	select {
	case err := <-opened:
		t.Fatalf("Open returned (%v) while another session held the migration lock", err)
	case <-time.After(300 * time.Millisecond):
	}
	var tables int
	if err := holder.QueryRow(ctx(t), `SELECT count(*) FROM pg_tables WHERE schemaname = 'public'`).Scan(&tables); err != nil || tables != 0 {
		t.Fatalf("%d tables created while the lock was held (%v)", tables, err)
	}
	if _, err := holder.Exec(ctx(t), `SELECT pg_advisory_unlock($1)`, store.MigrationLockKey); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-opened:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Open still waiting after the lock was released")
	}
}

// connect opens a plain pgx connection for the test's own SQL.
func connect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(ctx(t), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}
