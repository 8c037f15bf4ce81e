package snapshot

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/lru"
)

// Generation counts the changes a replica made to the data a Memo's values
// are computed from. The zero value is ready; a nil Generation stays 0.
type Generation struct{ n atomic.Uint64 }

// Bump records a change. Call it after the change is committed.
func (g *Generation) Bump() {
	if g != nil {
		g.n.Add(1)
	}
}

// Load returns the number of changes so far. Read it before reading the
// data a value is computed from.
func (g *Generation) Load() uint64 {
	if g == nil {
		return 0
	}
	return g.n.Load()
}

// Memo is a bounded cache of computed values, each living at most maxAge,
// with one computation per key in flight. Safe for concurrent use.
type Memo[V any] struct {
	cache   *lru.Cache[string, V]
	flight  singleflight.Group
	timeout time.Duration
}

// New returns a Memo of at most maxEntries values, each served for at
// most maxAge by the clock now; a computation may take up to timeout.
func New[V any](maxEntries int, maxAge, timeout time.Duration, now func() time.Time) *Memo[V] {
	return &Memo[V]{cache: lru.New[string, V](maxEntries, maxAge, now), timeout: timeout}
}

// Get returns the value of key: the cached one if it is younger than the
// Memo's age and valid says it still holds, or else a new one from
// compute, cached. Callers asking for the same key and version (what the
// value must reflect, such as a Generation: a caller never joins a
// computation that started before the change it must see) share one
// computation, which runs on ctx's values without its cancellation (a
// caller that gives up does not fail the others) and within the Memo's
// timeout. An error is not cached.
func (m *Memo[V]) Get(ctx context.Context, key, version string, valid func(V) bool, compute func(context.Context) (V, error)) (V, error) {
	if v, ok := m.cache.Get(key); ok && valid(v) {
		return v, nil
	}
	ch := m.flight.DoChan(key+"\x00"+version, func() (any, error) {
		// A computation that ended between the look-up above and this one
		// left its value: use it.
		if v, ok := m.cache.Get(key); ok && valid(v) {
			return v, nil
		}
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.timeout)
		defer cancel()
		v, err := compute(cctx)
		if err != nil {
			return nil, err
		}
		m.cache.Add(key, v)
		return v, nil
	})
	var zero V
	select {
	case <-ctx.Done():
		return zero, fmt.Errorf("wait for %s: %w", key, ctx.Err())
	case r := <-ch:
		if r.Err != nil {
			return zero, r.Err
		}
		return r.Val.(V), nil
	}
}

// Len is the number of cached values, expired ones included.
func (m *Memo[V]) Len() int { return m.cache.Len() }
