// Package storetest opens stores on throwaway Postgres databases for the
// tests of the store and of the packages built on it (pgtest.Main must run
// the test binary).
package storetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/test/support/pgtest"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
)

// ErrLog records the operations the store reported as failed.
type ErrLog struct {
	mu  sync.Mutex
	ops []string
}

// Add records op; it is the store's Options.OnError.
func (l *ErrLog) Add(op string) { l.mu.Lock(); l.ops = append(l.ops, op); l.mu.Unlock() }

// List returns the failed operations so far, oldest first.
func (l *ErrLog) List() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.ops...)
}

// Open returns a store on a fresh database (migrations applied), closed
// when the test ends, and its error log.
func Open(t *testing.T) (*store.Store, *ErrLog) {
	t.Helper()
	log := &ErrLog{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := store.Open(ctx, pgtest.NewDatabase(t), store.Options{OnError: log.Add})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st, log
}
