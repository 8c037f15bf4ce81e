package rematch

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"gorm.io/gorm"

	v6 "github.com/anchore/grype/grype/db/v6"
)

// countingPool counts the SQL statements Grype's store sends to SQLite
// (work.sqlStatements), so that a benchmark reads the DB work per report
// without timing noise. It stands between gorm and the store's *sql.DB.
type countingPool struct{ inner gorm.ConnPool }

func (p countingPool) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	return p.inner.PrepareContext(ctx, query)
}

func (p countingPool) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	work.sqlStatements.Add(1)
	return p.inner.ExecContext(ctx, query, args...)
}

func (p countingPool) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	work.sqlStatements.Add(1)
	return p.inner.QueryContext(ctx, query, args...)
}

func (p countingPool) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	work.sqlStatements.Add(1)
	return p.inner.QueryRowContext(ctx, query, args...)
}

// GetDBConn lets gorm find the *sql.DB (the store's Close goes through it).
func (p countingPool) GetDBConn() (*sql.DB, error) {
	if db, ok := p.inner.(*sql.DB); ok {
		return db, nil
	}
	if c, ok := p.inner.(gorm.GetDBConnector); ok {
		return c.GetDBConn()
	}
	return nil, gorm.ErrInvalidDB
}

// countStatements puts a countingPool under gdb, the store's root DB
// handle: every query the store builds from it inherits the pool. Call it
// before the store is used.
func countStatements(gdb *gorm.DB) {
	gdb.Statement.ConnPool = countingPool{inner: gdb.Statement.ConnPool}
}

// loadProvidersOnce makes the store read its providers table once. Grype
// reloads the whole table for every lookup it fills in (v6
// providerStore.fillProviders, called on every FindVulnerabilities, even
// one that found nothing: 20,018 of 48,563 statements for one report),
// and the method is unexported, so no Reader wrapper can answer it; a gorm
// query callback on the store's handle can. It answers the whole-table
// read — `Find(&[]Provider)` with no condition, join, preload, selection
// or raw SQL — with a copy of the rows read here, and lets every other
// query run.
func loadProvidersOnce(gdb *gorm.DB) error {
	var providers []v6.Provider
	if err := gdb.Find(&providers).Error; err != nil {
		return fmt.Errorf("read providers: %w", err)
	}
	query := gdb.Callback().Query()
	run := query.Get("gorm:query")
	if run == nil {
		return errors.New("gorm has no gorm:query callback: revisit loadProvidersOnce for this gorm version")
	}
	return query.Replace("gorm:query", func(db *gorm.DB) {
		dest, ok := db.Statement.Dest.(*[]v6.Provider)
		if !ok || !wholeTable(db.Statement) || db.Error != nil {
			run(db)
			return
		}
		*dest, _ = deepCopy(providers)
		db.RowsAffected = int64(len(providers))
	})
}

// wholeTable reports whether s reads a whole table: nothing narrows,
// joins, shapes or replaces the plain SELECT * that gorm would build.
func wholeTable(s *gorm.Statement) bool {
	return len(s.Clauses) == 0 && len(s.Joins) == 0 && len(s.Preloads) == 0 && len(s.Selects) == 0 &&
		len(s.Omits) == 0 && !s.Distinct && s.SQL.Len() == 0 && len(s.Vars) == 0 &&
		(s.Table == "" || s.Table == "providers")
}
