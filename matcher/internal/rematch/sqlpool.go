package rematch

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/callbacks"

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

// answerGlobalTables makes the store read its providers table once, and
// each query of its small global tables once per distinct SQL and
// arguments (smallTables below). Grype reloads the whole providers table
// for every lookup it fills in (v6 providerStore.fillProviders, called on
// every FindVulnerabilities, even one that found nothing: 20,018 of 48,563
// statements for one report), and the method is unexported, so no Reader
// wrapper can answer it; a gorm query callback on the store's handle can.
// It answers the whole-table read — `Find(&[]Provider)` with no condition,
// join, preload, selection or raw SQL — with a copy of the rows read here,
// hands the reads of rows by id to rowsByID and the small tables' queries
// to smallTables, and lets every other query run.
func answerGlobalTables(gdb *gorm.DB, memo *lru[memoID, any]) error {
	var providers []v6.Provider
	if err := gdb.Find(&providers).Error; err != nil {
		return fmt.Errorf("read providers: %w", err)
	}
	query := gdb.Callback().Query()
	run := query.Get("gorm:query")
	if run == nil {
		return errors.New("gorm has no gorm:query callback: revisit answerGlobalTables for this gorm version")
	}
	small := &smallTables{answers: map[string]any{}}
	rows := rowsByID{memo: memo}
	return query.Replace("gorm:query", func(db *gorm.DB) {
		if db.Error != nil {
			run(db)
			return
		}
		if dest, ok := db.Statement.Dest.(*[]v6.Provider); ok && wholeTable(db.Statement) {
			*dest = copyProviders(providers)
			db.RowsAffected = int64(len(providers))
			return
		}
		if rows.query(db, run) {
			return
		}
		small.query(db, run)
	})
}

// copyProviders is copyOut for the providers table, written out: Grype
// reads the whole table for every lookup it fills in (fillProviders), and
// the reflective copy of its rows was 2.4 % of a distinct report's CPU and
// 4.8 % of its allocated objects. Two allocations per call: the rows, and
// one array for the dates they point to, so no copy shares memory with
// another or with src. TestCopyProvidersIsADeepCopy fails if v6.Provider
// gains a field this does not know.
func copyProviders(src []v6.Provider) []v6.Provider {
	if src == nil {
		return nil
	}
	out := make([]v6.Provider, len(src))
	copy(out, src)
	dates := make([]time.Time, len(src))
	for i := range out {
		if d := src[i].DateCaptured; d != nil {
			dates[i] = *d
			out[i].DateCaptured = &dates[i]
		}
	}
	return out
}

// smallTables answers the queries of the store's small, global tables that
// repeat with the same arguments for every package lookup: the operating
// systems and OS aliases a lookup with a distro resolves
// (operatingSystemStore.applyOSAlias and searchForOSExactVersions, twice per
// package lookup) and the ecosystem overrides (packageStore.applyPackageAlias,
// once per lookup). The DB is read-only, so one SQL text with the same
// arguments returns the same rows in the same order: the first answer is
// kept and a deep copy of it handed out for each repeat. A change in these
// tables makes a DB diff full (globalTables), so no footprint needs them.
type smallTables struct {
	mu      sync.Mutex
	answers map[string]any // SQL and arguments -> the rows, a []T
}

// smallTablesMax bounds the answers kept (each is a few rows; the distinct
// OS and ecosystem specifiers of a fleet are far fewer); when full, new
// queries run as they are.
const smallTablesMax = 4096

func (st *smallTables) query(db *gorm.DB, run func(*gorm.DB)) {
	switch db.Statement.Dest.(type) {
	case *[]v6.OperatingSystem, *[]v6.OperatingSystemSpecifierOverride, *[]v6.PackageSpecifierOverride:
	default:
		run(db)
		return
	}
	s := db.Statement
	if len(s.Preloads) > 0 || len(s.Joins) > 0 {
		run(db)
		return
	}
	callbacks.BuildQuerySQL(db)
	key, ok := sqlKey(s.SQL.String(), s.Vars)
	if db.Error != nil || !ok {
		run(db)
		return
	}
	st.mu.Lock()
	kept, hit := st.answers[key]
	st.mu.Unlock()
	dest := reflect.ValueOf(s.Dest).Elem() // the *[]T's slice
	if hit {
		dest.Set(reflect.ValueOf(copyOut(kept)))
		db.RowsAffected = int64(dest.Len())
		return
	}
	run(db) // the SQL is built: gorm's Query runs it as it stands
	if db.Error != nil {
		return
	}
	rows, _ := deepCopy(dest.Interface())
	st.mu.Lock()
	if len(st.answers) < smallTablesMax {
		st.answers[key] = rows
	}
	st.mu.Unlock()
}

// sqlKey is the SQL text and its arguments; false when an argument is not
// a plain value (a pointer's target could change between two calls).
func sqlKey(sqlText string, vars []any) (string, bool) {
	var b strings.Builder
	b.WriteString(sqlText)
	for _, v := range vars {
		switch v := v.(type) {
		case string:
			b.WriteString("\x00s")
			b.WriteString(v)
		case int, int64, int32, uint, uint64, uint32, bool:
			fmt.Fprintf(&b, "\x00%T%v", v, v)
		default:
			return "", false
		}
	}
	return b.String(), true
}

// wholeTable reports whether s reads a whole table: nothing narrows,
// joins, shapes or replaces the plain SELECT * that gorm would build.
func wholeTable(s *gorm.Statement) bool {
	return len(s.Clauses) == 0 && len(s.Joins) == 0 && len(s.Preloads) == 0 && len(s.Selects) == 0 &&
		len(s.Omits) == 0 && !s.Distinct && s.SQL.Len() == 0 && len(s.Vars) == 0 &&
		(s.Table == "" || s.Table == "providers")
}

// rowsByID answers the store's reads of rows by primary key from the DB
// memo, one row per entry. Grype fills in every handle a lookup returns —
// a memo hit as much as a miss — by reading the vulnerability, operating
// system, package and CPE rows it refers to and its blobs, each as
// `SELECT * FROM <table> WHERE id IN (...)` (v6 fillRefs, getBlobValues;
// fillAffectedPackageHandles runs after every GetAffectedPackages), so the
// same rows are read again for every package that meets them. The DB is
// read-only: a row read once is the row. A read is answered when the memo
// holds every row it names, with the rows in ascending id order, once each,
// as SQLite returns them for an IN list on the table's integer key
// (TestRowsByIDAnswers compares); otherwise it runs and its rows are kept.
type rowsByID struct{ memo *lru[memoID, any] }

// byIDSQL is the statement gorm builds for Where("id IN (?)", ids).Find of
// one of the tables rowsByID answers.
var byIDSQL = regexp.MustCompile("^SELECT \\* FROM `(vulnerability_handles|operating_systems|packages|cpes|blobs)` WHERE id IN \\((?:\\?,)*\\?\\)$")

// query answers db's read if it is a read of rows by id, and reports
// whether it was one (answered or run).
func (r rowsByID) query(db *gorm.DB, run func(*gorm.DB)) bool {
	s := db.Statement
	switch s.Dest.(type) {
	case *[]v6.VulnerabilityHandle, *[]v6.OperatingSystem, *[]v6.Package, *[]v6.Cpe, *[]v6.Blob:
	default:
		return false
	}
	if len(s.Preloads) > 0 || len(s.Joins) > 0 {
		return false
	}
	callbacks.BuildQuerySQL(db)
	m := byIDSQL.FindStringSubmatch(s.SQL.String())
	if db.Error != nil || m == nil {
		return false // the SQL is built: the next query runs it as it stands
	}
	ids := make([]int64, 0, len(s.Vars))
	for _, v := range s.Vars {
		rv := reflect.ValueOf(v)
		if rv.Kind() != reflect.Int64 {
			return false
		}
		ids = append(ids, rv.Int())
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	dest := reflect.ValueOf(s.Dest).Elem() // the *[]T's slice
	// a row is kept under its table and the type it was read into: a read
	// of one table into another table's type (Table, Model) keeps its own
	kind := m[1] + "#" + dest.Type().Elem().Name()
	out := reflect.MakeSlice(dest.Type(), 0, len(ids))
	for _, id := range ids {
		row, hit := r.memo.get(rowKey(kind, id))
		if !hit {
			run(db)
			r.keep(db, kind, dest)
			r.attachVulnerabilityBlobs(db)
			return true
		}
		out = reflect.Append(out, reflect.ValueOf(copyOut(row)))
	}
	dest.Set(out)
	db.RowsAffected = int64(out.Len())
	r.attachVulnerabilityBlobs(db)
	return true
}

// attachVulnerabilityBlobs gives each vulnerability row just read the
// decoded blob Grype would attach to it next. Grype reads the rows by id
// to fill in every handle a lookup returns (fillVulnerabilityHandles), then
// reads each row's blob and json.Unmarshals it again (attachBlobValue,
// VulnerabilityHandle.setBlob) — for every package that meets the
// vulnerability, a memo hit as much as a miss: 11.8 % of a distinct
// report's CPU (docs/benchmarks.md). attachBlobValue skips a row whose
// blob is already there, so a row handed back with it is not decoded
// again. The blob is decoded here with the same json.Unmarshal into the
// same type, once per blob of the DB build, and kept in the memo; each
// answer gets its own deep copy (Grype's handles are its to change). A
// blob not yet read (the first time a vulnerability is met: Grype reads
// it, and rowsByID keeps the raw row) or that does not decode (Grype's own
// decode then reports the error) is left for Grype to attach. The memo
// keeps the decoded blob instead of the raw one, so that the bytes it is
// bounded by hold as many answers as before.
func (r rowsByID) attachVulnerabilityBlobs(db *gorm.DB) {
	dest, ok := db.Statement.Dest.(*[]v6.VulnerabilityHandle)
	if !ok || db.Error != nil {
		return
	}
	for i := range *dest {
		h := &(*dest)[i]
		if h.BlobID == 0 || h.BlobValue != nil {
			continue
		}
		work.blobRows.Add(1)
		key := rowKey("decoded#VulnerabilityBlob", int64(h.BlobID))
		if v, hit := r.memo.get(key); hit {
			h.BlobValue = copyOut(v.(*v6.VulnerabilityBlob))
			continue
		}
		work.blobDecodes.Add(1) // here, or by Grype next
		rawKey := rowKey("blobs#Blob", int64(h.BlobID))
		raw, hit := r.memo.get(rawKey)
		if !hit {
			continue
		}
		var blob v6.VulnerabilityBlob
		if err := json.Unmarshal([]byte(raw.(v6.Blob).Value), &blob); err != nil {
			continue
		}
		kept, size := deepCopy(&blob)
		r.memo.add(key, kept, size+int64(len(key))+entryOverhead)
		// The decoded blob takes the raw one's place: Grype reads the raw
		// one only for a row handed back without it, and if the decoded
		// one is evicted, the next read of the raw one runs and keeps it.
		r.memo.remove(rawKey)
		h.BlobValue = &blob
	}
}

// keep adds the rows a read returned to the memo, each under its id.
func (r rowsByID) keep(db *gorm.DB, kind string, dest reflect.Value) {
	if db.Error != nil {
		return
	}
	for i := range dest.Len() {
		row := dest.Index(i)
		key := rowKey(kind, row.FieldByName("ID").Int())
		kept, size := deepCopy(row.Interface())
		r.memo.add(key, kept, size+int64(len(key))+entryOverhead)
	}
}

// rowKey is the memo's key for one row (or decoded blob) of a table: the
// SHA-256 of "#<kind>#<id>", which no query's encoding (a method's name
// first) can be.
func rowKey(kind string, id int64) memoID {
	var buf [64]byte
	b := append(buf[:0], '#')
	b = append(b, kind...)
	b = append(b, '#')
	return sha256.Sum256(strconv.AppendInt(b, id, 10))
}
