package store

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/pressly/goose/v3"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// Sentinel errors.
var (
	ErrNotFound  = errors.New("not found")
	ErrBadCursor = errors.New("invalid cursor")
)

//go:embed migrations/*.sql
var migrations embed.FS

// Options tune the store.
type Options struct {
	// OnError is called once per failed database operation (for metrics).
	OnError func(op string)
	// MaxOpenConns caps the connection pool (default 20).
	MaxOpenConns int
}

// Store is the Postgres-backed report store.
type Store struct {
	db      *gorm.DB
	onError func(op string)
}

// Open connects to Postgres, applies pending migrations and returns the store.
func Open(ctx context.Context, dsn string, o Options) (*Store, error) {
	db, err := gorm.Open(postgres.Open(dsn), &gorm.Config{
		Logger:                 logger.Discard,
		SkipDefaultTransaction: true,
		TranslateError:         true,
	})
	if err != nil {
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	if o.MaxOpenConns <= 0 {
		o.MaxOpenConns = 20
	}
	sqlDB.SetMaxOpenConns(o.MaxOpenConns)
	sqlDB.SetMaxIdleConns(o.MaxOpenConns)
	sqlDB.SetConnMaxIdleTime(5 * time.Minute)
	if err := sqlDB.PingContext(ctx); err != nil {
		_ = sqlDB.Close()
		return nil, fmt.Errorf("ping postgres: %w", err)
	}
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return nil, err
	}
	p, err := goose.NewProvider(goose.DialectPostgres, sqlDB, sub)
	if err != nil {
		_ = sqlDB.Close()
		return nil, fmt.Errorf("migrations: %w", err)
	}
	if _, err := p.Up(ctx); err != nil {
		_ = sqlDB.Close()
		return nil, fmt.Errorf("apply migrations: %w", err)
	}
	if o.OnError == nil {
		o.OnError = func(string) {}
	}
	return &Store{db: db, onError: o.OnError}, nil
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

// fail records a database error for metrics and wraps it with the operation.
func (s *Store) fail(op string, err error) error {
	if err == nil || errors.Is(err, ErrNotFound) || errors.Is(err, ErrBadCursor) {
		return err
	}
	if !errors.Is(err, context.Canceled) {
		s.onError(op)
	}
	return fmt.Errorf("%s: %w", op, err)
}
