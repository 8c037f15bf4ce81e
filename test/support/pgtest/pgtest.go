package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

var adminURL string

// Main runs a test binary with a Postgres server: the one in
// CROWSNEST_TEST_DATABASE_URL, or a throwaway one that is stopped and removed
// afterwards. Use it as `func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }`.
func Main(m *testing.M) int {
	if u := os.Getenv(EnvDatabaseURL); u != "" {
		adminURL = u
		return m.Run()
	}
	srv, err := StartServer()
	if err != nil {
		fmt.Fprintln(os.Stderr, "pgtest: start postgres:", err)
		return 1
	}
	adminURL = srv.AdminURL()
	code := m.Run()
	if err := srv.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "pgtest: stop postgres:", err)
	}
	return code
}

// NewDatabase creates an empty database for the test, drops it when the test
// ends, and returns its connection URL.
func NewDatabase(t testing.TB) string {
	t.Helper()
	dsn, drop, err := CreateDatabase(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := drop(); err != nil {
			t.Errorf("drop test database: %v", err)
		}
	})
	return dsn
}

// CreateDatabase creates an empty database with a random name and returns its
// URL and a function that drops it. Benchmarks and TestMain use it directly.
func CreateDatabase(ctx context.Context) (string, func() error, error) {
	if adminURL == "" {
		return "", nil, fmt.Errorf("pgtest: no server; call pgtest.Main from TestMain")
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "crowsnest_test_" + hex.EncodeToString(b[:])
	if err := execAdmin(ctx, "CREATE DATABASE "+name); err != nil {
		return "", nil, fmt.Errorf("create database %s: %w", name, err)
	}
	u, err := url.Parse(adminURL)
	if err != nil {
		return "", nil, err
	}
	u.Path = "/" + name
	drop := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return execAdmin(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	}
	return u.String(), drop, nil
}

func execAdmin(ctx context.Context, sql string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}
