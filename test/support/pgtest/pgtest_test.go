package pgtest_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/crowsnest-dev/crowsnest/test/support/internal/orphan"
	"github.com/crowsnest-dev/crowsnest/test/support/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// TestRoundTrip proves a real Postgres answers: a row written is read back,
// and two test databases do not see each other's tables.
func TestRoundTrip(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	conn, err := pgx.Connect(ctx, pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE TABLE smoke (digest text PRIMARY KEY, findings int NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO smoke VALUES ($1, $2)`, "sha256:abc", 42); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := conn.QueryRow(ctx, `SELECT findings FROM smoke WHERE digest = $1`, "sha256:abc").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 42 {
		t.Fatalf("read back %d, want 42", n)
	}

	other, err := pgx.Connect(ctx, pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(ctx)
	var exists bool
	if err := other.QueryRow(ctx, `SELECT to_regclass('smoke') IS NOT NULL`).Scan(&exists); err != nil {
		t.Fatal(err)
	}
	if exists {
		t.Fatal("second test database sees the first one's table")
	}
}

// TestPauseAndResume: a paused server refuses connections, and once
// resumed on the same port it has every committed row.
func TestPauseAndResume(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv, err := pgtest.StartServer()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Stop() }()
	url := srv.AdminURL()
	exec := func(sql string) error {
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, sql)
		return err
	}
	if err := exec(`CREATE TABLE kept (n int); INSERT INTO kept VALUES (1), (2), (3)`); err != nil {
		t.Fatal(err)
	}
	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	if err := exec(`SELECT 1`); err == nil {
		t.Fatal("a paused server answered")
	}
	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM kept`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Fatalf("rows after resume: %d, want 3", n)
	}
}

// TestServerDiesWithItsProcess: a test binary killed with SIGKILL (what
// `go test -timeout` amounts to) leaves no Postgres running.
func TestServerDiesWithItsProcess(t *testing.T) {
	if orphan.IsChild() {
		if _, err := pgtest.StartServer(); err != nil {
			t.Fatal(err)
		}
		orphan.Report(orphan.Children())
		return
	}
	orphan.Check(t, "TestServerDiesWithItsProcess")
}
