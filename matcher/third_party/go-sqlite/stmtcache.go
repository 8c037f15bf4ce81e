// Crowsnest patch (see PATCH.md): a per-connection cache of prepared
// statements, keyed by the query text, so that a query run again on the same
// connection skips sqlite3_prepare_v2 (SQLite's parser and planner). Grype's
// v6 store sends thousands of queries per SBOM through gorm with a few dozen
// distinct texts; preparing each afresh was ~23 % of a re-match's CPU.

package sqlite

import (
	"container/list"
	"database/sql/driver"
	"unsafe"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// stmtCacheSize bounds the statements one connection keeps prepared. Query
// texts that differ only in the length of an IN list are distinct entries;
// the least recently used one is finalized when a new one needs room.
const stmtCacheSize = 256

// cachedStmt is a prepared statement that outlives one query. While a rows
// iterator reads it, inUse is set and the connection prepares a fresh
// statement for the same text instead (the old behaviour).
type cachedStmt struct {
	query   string
	pstmt   uintptr
	inUse   bool
	evicted bool // finalize it when its rows close
	elem    *list.Element
}

// stmtCache is owned by one conn; database/sql never uses a conn from two
// goroutines at once, so it needs no lock of its own.
type stmtCache struct {
	byQuery map[string]*cachedStmt
	lru     list.List // front: most recently used
}

// take returns the idle cached statement for query, marked in use, or nil.
func (s *stmtCache) take(query string) *cachedStmt {
	cs := s.byQuery[query]
	if cs == nil || cs.inUse {
		return nil
	}
	cs.inUse = true
	s.lru.MoveToFront(cs.elem)
	return cs
}

// add keeps pstmt, prepared from the single statement query, marked in use,
// and finalizes the least recently used idle statements beyond the bound.
// It returns nil (the caller finalizes pstmt as before) when query already
// has an entry, which is then in use by another rows iterator.
func (s *stmtCache) add(c *conn, query string, pstmt uintptr) *cachedStmt {
	if _, ok := s.byQuery[query]; ok {
		return nil
	}
	if s.byQuery == nil {
		s.byQuery = map[string]*cachedStmt{}
	}
	cs := &cachedStmt{query: query, pstmt: pstmt, inUse: true}
	cs.elem = s.lru.PushFront(cs)
	s.byQuery[query] = cs
	for s.lru.Len() > stmtCacheSize {
		old := s.lru.Back().Value.(*cachedStmt)
		s.remove(old)
		if old.inUse {
			old.evicted = true
			continue
		}
		_ = c.finalize(old.pstmt)
	}
	return cs
}

func (s *stmtCache) remove(cs *cachedStmt) {
	s.lru.Remove(cs.elem)
	delete(s.byQuery, cs.query)
}

// release makes cs reusable once its rows close: reset (which ends its read
// of the database) and cleared bindings, so the next query binds afresh.
// A statement evicted meanwhile, or one whose reset fails, is finalized.
func (s *stmtCache) release(c *conn, cs *cachedStmt) error {
	cs.inUse = false
	if cs.evicted {
		return c.finalize(cs.pstmt)
	}
	rc := sqlite3.Xsqlite3_reset(c.tls, cs.pstmt)
	sqlite3.Xsqlite3_clear_bindings(c.tls, cs.pstmt)
	if rc != sqlite3.SQLITE_OK {
		// The statement's last step failed (an interrupt, a busy database):
		// that error was returned by the step already; start clean.
		s.remove(cs)
		return c.finalize(cs.pstmt)
	}
	return nil
}

// finalizeAll finalizes every idle statement; the connection is closing.
func (s *stmtCache) finalizeAll(c *conn) {
	for e := s.lru.Front(); e != nil; e = e.Next() {
		cs := e.Value.(*cachedStmt)
		if cs.inUse {
			cs.evicted = true
			continue
		}
		_ = c.finalize(cs.pstmt)
	}
	s.lru.Init()
	s.byQuery = nil
}

// queryCached runs query as a single prepared statement from the cache, or
// prepares it and keeps it when the text is one statement. ok is false when
// the text is several statements (or none, or has anything after its first
// statement): the caller then runs the unpatched path.
func (c *conn) queryCached(query string, args []driver.NamedValue) (r driver.Rows, ok bool, err error) {
	cs := c.stmts.take(query)
	if cs == nil {
		psql, err := libc.CString(query)
		if err != nil {
			return nil, true, err
		}
		tail := psql
		pstmt, err := c.prepareV2(&tail)
		// tail is a C pointer into psql (libc memory, not Go's), as in stmt.query.
		single := err == nil && pstmt != 0 && *(*byte)(unsafe.Pointer(tail)) == 0 //nolint:govet // see above
		c.free(psql)
		if err != nil {
			return nil, true, err
		}
		if !single {
			if pstmt != 0 {
				if err := c.finalize(pstmt); err != nil {
					return nil, true, err
				}
			}
			return nil, false, nil
		}
		if cs = c.stmts.add(c, query, pstmt); cs == nil {
			// Another iterator holds this text's cached statement: run this
			// one uncached, finalized when its rows close.
			r, err := c.rowsFor(pstmt, nil, args)
			return r, true, err
		}
	}
	r, err = c.rowsFor(cs.pstmt, cs, args)
	return r, true, err
}

// rowsFor binds args to pstmt and returns its rows iterator, as the last
// statement of stmt.query does; cs is pstmt's cache entry, or nil.
func (c *conn) rowsFor(pstmt uintptr, cs *cachedStmt, args []driver.NamedValue) (driver.Rows, error) {
	nParams, err := c.bindParameterCount(pstmt)
	if err == nil {
		var allocs []uintptr
		if allocs, err = c.bind(pstmt, nParams, args); err == nil {
			var r *rows
			if r, err = newRows(c, pstmt, allocs, cs); err == nil {
				return r, nil
			}
			return nil, err // newRows closed it
		}
	}
	if cs != nil {
		_ = c.stmts.release(c, cs)
	} else {
		_ = c.finalize(pstmt)
	}
	return nil, err
}
