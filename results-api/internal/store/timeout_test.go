package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/crowsnest-dev/crowsnest/test/support/pgtest"
)

// Every pooled connection carries the statement timeout: a statement that
// runs longer fails with ErrTimeout (and is counted), the connection
// stays usable, and a statement within the timeout is unaffected.
// (An internal test: no store method sleeps on purpose.)
func TestStatementTimeout(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var failed []string
	st, err := Open(ctx, pgtest.NewDatabase(t), Options{StatementTimeout: 200 * time.Millisecond, MaxOpenConns: 1,
		OnError: func(op string) { failed = append(failed, op) }})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var setting string
	if err := st.db.WithContext(ctx).Raw("SHOW statement_timeout").Scan(&setting).Error; err != nil || setting != "200ms" {
		t.Fatalf("statement_timeout = %q, %v; want 200ms", setting, err)
	}
	start := time.Now()
	err = st.fail("sleep", st.db.WithContext(ctx).Exec("SELECT pg_sleep(5)").Error)
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("pg_sleep(5) with a 200ms timeout: %v, want ErrTimeout", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("the timeout took %v", d)
	}
	if len(failed) != 1 || failed[0] != "sleep" {
		t.Errorf("counted failures %v, want [sleep]", failed)
	}
	if err := st.db.WithContext(ctx).Exec("SELECT pg_sleep(0.05)").Error; err != nil {
		t.Fatalf("a statement within the timeout, on the same connection: %v", err)
	}
	// A context deadline is the caller's, not the database's timeout.
	short, cancelShort := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancelShort()
	if err := st.fail("sleep", st.db.WithContext(short).Exec("SELECT pg_sleep(1)").Error); errors.Is(err, ErrTimeout) {
		t.Errorf("a context deadline reported as the statement timeout: %v", err)
	}
}

// Migrations run on a pool of their own, without the statement timeout:
// with a 1 ms timeout, which every migration statement would exceed, a
// fresh database still migrates.
func TestMigrationsIgnoreStatementTimeout(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := Open(ctx, pgtest.NewDatabase(t), Options{StatementTimeout: time.Millisecond})
	if err != nil {
		t.Fatalf("open with a 1ms statement timeout: %v", err)
	}
	defer st.Close()
	// The serving pool carries the timeout: a statement that would run a
	// second is cancelled. Any statement, SHOW included, may be cancelled at
	// 1 ms on a loaded machine, so the test does not read the setting; and
	// at 1 ms Postgres may report the expired timeout as "canceling
	// statement due to user request" (the timer can fire between
	// statements, and its indicator is cleared when the statement ends while
	// the cancel stays pending). Both are query_canceled (57014); without the
	// timeout the sleep succeeds. TestStatementTimeout covers the mapping.
	start := time.Now()
	err = st.db.WithContext(ctx).Exec("SELECT pg_sleep(1)").Error
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "57014" {
		t.Fatalf("pg_sleep(1) on the serving pool with a 1ms timeout: %v after %v; want query_canceled (57014)", err, time.Since(start))
	}
}
