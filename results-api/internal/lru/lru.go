// Package lru is a bounded least-recently-used cache whose entries expire,
// and a Memo over it that computes each missing value once however many
// callers want it: the verdict caches of authentication and authorization
// and the /stats snapshots.
package lru

import (
	"container/list"
	"sync"
	"time"
)

// Cache is a bounded, least-recently-used cache whose entries also expire
// after a fixed time to live. It is safe for concurrent use.
type Cache[K comparable, V any] struct {
	mu    sync.Mutex
	max   int
	ttl   time.Duration
	now   func() time.Time
	order *list.List // front: most recently used; values are *lruEntry
	items map[K]*list.Element
}

type lruEntry[K comparable, V any] struct {
	key     K
	val     V
	expires time.Time
}

// New returns a cache of at most maxEntries entries, each living ttl.
func New[K comparable, V any](maxEntries int, ttl time.Duration, now func() time.Time) *Cache[K, V] {
	return &Cache[K, V]{max: maxEntries, ttl: ttl, now: now, order: list.New(), items: make(map[K]*list.Element)}
}

// Get returns the live value for k; an expired entry is dropped.
func (c *Cache[K, V]) Get(k K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var zero V
	el, ok := c.items[k]
	if !ok {
		return zero, false
	}
	e := el.Value.(*lruEntry[K, V])
	if !c.now().Before(e.expires) {
		c.order.Remove(el)
		delete(c.items, k)
		return zero, false
	}
	c.order.MoveToFront(el)
	return e.val, true
}

// Add stores v under k for the cache's TTL, evicting the least recently
// used entry when the cache is full.
func (c *Cache[K, V]) Add(k K, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	expires := c.now().Add(c.ttl)
	if el, ok := c.items[k]; ok {
		e := el.Value.(*lruEntry[K, V])
		e.val, e.expires = v, expires
		c.order.MoveToFront(el)
		return
	}
	for c.order.Len() >= c.max {
		oldest := c.order.Back()
		c.order.Remove(oldest)
		delete(c.items, oldest.Value.(*lruEntry[K, V]).key)
	}
	c.items[k] = c.order.PushFront(&lruEntry[K, V]{key: k, val: v, expires: expires})
}

// Remove drops k, if present.
func (c *Cache[K, V]) Remove(k K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[k]; ok {
		c.order.Remove(el)
		delete(c.items, k)
	}
}

// Len returns the number of entries, expired ones included.
func (c *Cache[K, V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
