package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// Sentinel errors.
var (
	ErrNotFound  = errors.New("not found")
	ErrBadCursor = errors.New("invalid cursor")
	// ErrTimeout: Postgres cancelled the statement at the statement
	// timeout (or waiting for a lock beyond it). Retrying later may work.
	ErrTimeout = errors.New("database statement timed out")
	// ErrRematchRefused: a rematch (report.CauseRematch) that would not
	// only change an existing report's findings: the digest has no report,
	// or the new BOM lists other components than the stored one.
	ErrRematchRefused = errors.New("rematch refused")
)

// DefaultStatementTimeout bounds every statement the store runs.
const DefaultStatementTimeout = 15 * time.Second

//go:embed migrations/*.sql
var migrations embed.FS

// Options tune the store.
type Options struct {
	// OnError is called once per failed database operation (for metrics).
	OnError func(op string)
	// MaxOpenConns caps the connection pool (default 20).
	MaxOpenConns int
	// StatementTimeout is Postgres' statement_timeout on every pooled
	// connection (default DefaultStatementTimeout): a slow query, or one
	// stuck behind a lock, fails with ErrTimeout instead of holding a
	// connection and its request. Migrations run without it.
	StatementTimeout time.Duration
	// OnStatement, when set, is called after every SQL statement the
	// store runs, with the statement's context (tests and benchmarks count
	// them).
	OnStatement func(ctx context.Context)
	// Announcer, when set, builds the event of each report change, which
	// is then written into the outbox in the change's transaction (see
	// Announcer). Without one (no NATS) nothing is written there.
	Announcer Announcer
}

// Store is the Postgres-backed report store.
type Store struct {
	db        *gorm.DB
	onError   func(op string)
	announcer Announcer
}

// Open connects to Postgres, applies pending migrations and returns the store.
func Open(ctx context.Context, dsn string, o Options) (*Store, error) {
	if o.MaxOpenConns <= 0 {
		o.MaxOpenConns = 20
	}
	if o.StatementTimeout <= 0 {
		o.StatementTimeout = DefaultStatementTimeout
	}
	if o.OnError == nil {
		o.OnError = func(string) {}
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		// pgx's error quotes the DSN, password included: never wrap it.
		return nil, errors.New("open postgres: invalid database URL")
	}
	if err := migrate(ctx, stdlib.OpenDB(*cfg.Copy())); err != nil {
		return nil, err
	}
	// A startup parameter, so it holds on every connection from the first
	// statement, whatever gorm or pgx run on it.
	cfg.RuntimeParams["statement_timeout"] = strconv.FormatInt(o.StatementTimeout.Milliseconds(), 10)
	sqlDB := stdlib.OpenDB(*cfg)
	sqlDB.SetMaxOpenConns(o.MaxOpenConns)
	sqlDB.SetMaxIdleConns(o.MaxOpenConns)
	sqlDB.SetConnMaxIdleTime(5 * time.Minute)
	db, err := gorm.Open(postgres.New(postgres.Config{Conn: sqlDB}), &gorm.Config{
		Logger:                 logger.Discard,
		SkipDefaultTransaction: true,
		TranslateError:         true,
	})
	if err != nil {
		_ = sqlDB.Close()
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	if err := sqlDB.PingContext(ctx); err != nil {
		_ = sqlDB.Close()
		return nil, fmt.Errorf("ping postgres: %w", err)
	}
	if o.OnStatement != nil {
		if err := onStatement(db, o.OnStatement); err != nil {
			_ = sqlDB.Close()
			return nil, err
		}
	}
	return &Store{db: db, onError: o.OnError, announcer: o.Announcer}, nil
}

// onStatement calls count after each statement gorm runs on db.
func onStatement(db *gorm.DB, count func(context.Context)) error {
	cb := db.Callback()
	after := func(tx *gorm.DB) { count(tx.Statement.Context) }
	for _, err := range []error{
		cb.Create().After("*").Register("crowsnest:count", after), cb.Query().After("*").Register("crowsnest:count", after),
		cb.Update().After("*").Register("crowsnest:count", after), cb.Delete().After("*").Register("crowsnest:count", after),
		cb.Row().After("*").Register("crowsnest:count", after), cb.Raw().After("*").Register("crowsnest:count", after),
	} {
		if err != nil {
			return fmt.Errorf("count statements: %w", err)
		}
	}
	return nil
}

// MigrationLockKey is the key of the Postgres advisory lock results-api
// holds while it migrates: "crowsnes" in ASCII (in pg_locks while held:
// locktype advisory, classid 1668444023, objid 1936614771, objsubid 1).
const MigrationLockKey int64 = 0x63726f77736e6573

// migrate applies pending migrations on a pool of its own, closed after:
// a migration that builds an index on a large table may run longer than
// the statement timeout of the serving pool. Replicas starting together
// take turns: each holds the session advisory lock MigrationLockKey on a
// connection of its own while goose runs, so the second waits for the
// first and then finds nothing to do. A session lock dies with its
// connection: a migrator that crashes never leaves it held.
func migrate(ctx context.Context, sqlDB *sql.DB) error {
	defer sqlDB.Close()
	if err := sqlDB.PingContext(ctx); err != nil {
		return fmt.Errorf("ping postgres: %w", err)
	}
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return err
	}
	p, err := goose.NewProvider(goose.DialectPostgres, sqlDB, sub)
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	lock, err := sqlDB.Conn(ctx)
	if err != nil {
		return fmt.Errorf("migration lock: %w", err)
	}
	// Closing the pool (deferred above) closes this connection, and the
	// lock with it, should the unlock fail.
	defer lock.Close()
	if _, err := lock.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, MigrationLockKey); err != nil {
		return fmt.Errorf("migration lock: %w", err)
	}
	defer func() {
		_, _ = lock.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, MigrationLockKey)
	}()
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("apply migrations: %w", err)
	}
	return nil
}

// Close closes the connection pool.
func (s *Store) Close() error {
	sqlDB, err := s.db.DB()
	if err != nil {
		return err
	}
	return sqlDB.Close()
}

// Ping checks that Postgres answers.
func (s *Store) Ping(ctx context.Context) error {
	sqlDB, err := s.db.DB()
	if err != nil {
		return err
	}
	return sqlDB.PingContext(ctx)
}

// fail records a database error for metrics and wraps it with the
// operation; a statement timeout becomes ErrTimeout (keeping the cause).
func (s *Store) fail(op string, err error) error {
	if err == nil || errors.Is(err, ErrNotFound) || errors.Is(err, ErrBadCursor) || errors.Is(err, ErrRematchRefused) {
		return err
	}
	if !errors.Is(err, context.Canceled) {
		s.onError(op)
	}
	if isStatementTimeout(err) {
		return fmt.Errorf("%s: %w: %w", op, ErrTimeout, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// isStatementTimeout recognises Postgres' query_canceled (57014) raised by
// statement_timeout. The same code with "user request" is pgx cancelling
// for a done context, which the context error already describes.
func isStatementTimeout(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "57014" && pe.Message == "canceling statement due to statement timeout"
}
