package lru

import (
	"context"
	"time"

	"golang.org/x/sync/singleflight"
)

// Memo is a Cache of computed values with at most one computation per key
// in flight: concurrent callers missing the same key wait for one
// computation instead of each asking Postgres or the API server. It is what
// the verdict caches of authentication and authorization and the /stats
// snapshots share. Safe for concurrent use.
type Memo[V any] struct {
	cache   *Cache[string, V]
	flight  singleflight.Group
	timeout time.Duration
}

// NewMemo returns a Memo of at most maxEntries values, each served for at
// most ttl by the clock now. A computation may take up to timeout (0: no
// limit of the Memo's own; the computation bounds its calls itself).
func NewMemo[V any](maxEntries int, ttl, timeout time.Duration, now func() time.Time) *Memo[V] {
	return &Memo[V]{cache: New[string, V](maxEntries, ttl, now), timeout: timeout}
}

// Get returns the value of key: the cached one if it is live and valid
// (nil: always) says it still holds, or else a new one from compute,
// cached. Callers asking for the same key and version (what the value
// must reflect, such as a generation of the data: a caller never joins a
// computation that started before the change it must see) share one
// computation, which runs on ctx's values without its cancellation (a
// caller that gives up does not fail the others) and within the Memo's
// timeout. An error is not cached. A caller whose ctx ends first gets
// ctx's error, wrapped.
func (m *Memo[V]) Get(ctx context.Context, key, version string, valid func(V) bool, compute func(context.Context) (V, error)) (V, error) {
	if v, ok := m.live(key, valid); ok {
		return v, nil
	}
	ch := m.flight.DoChan(key+"\x00"+version, func() (any, error) {
		// A computation that ended between the look-up above and this one
		// left its value: use it.
		if v, ok := m.live(key, valid); ok {
			return v, nil
		}
		cctx, cancel := context.WithoutCancel(ctx), context.CancelFunc(func() {})
		if m.timeout > 0 {
			cctx, cancel = context.WithTimeout(cctx, m.timeout)
		}
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
		return zero, ctx.Err()
	case r := <-ch:
		if r.Err != nil {
			return zero, r.Err
		}
		return r.Val.(V), nil
	}
}

func (m *Memo[V]) live(key string, valid func(V) bool) (V, bool) {
	v, ok := m.cache.Get(key)
	if ok && valid != nil && !valid(v) {
		var zero V
		return zero, false
	}
	return v, ok
}

// Peek returns key's live value without computing one.
func (m *Memo[V]) Peek(key string) (V, bool) { return m.cache.Get(key) }

// Len is the number of cached values, expired ones included.
func (m *Memo[V]) Len() int { return m.cache.Len() }
