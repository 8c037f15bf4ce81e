package rematch

import (
	"container/list"
	"sync"
)

// lru maps keys to values that are never changed once stored, bounded by
// the bytes the values hold (as their owner counts them): adding past the
// bound drops the least recently used entries first. It is safe for
// concurrent use. The match cache and the DB memo both keep their answers
// in one.
type lru[K comparable, V any] struct {
	maxBytes int64

	mu      sync.Mutex
	entries map[K]*list.Element
	order   list.List // of *lruEntry[K, V], most recently used first
	stats   CacheStats
}

type lruEntry[K comparable, V any] struct {
	key   K
	value V
	bytes int64
}

func newLRU[K comparable, V any](maxBytes int64) *lru[K, V] {
	return &lru[K, V]{maxBytes: maxBytes, entries: map[K]*list.Element{}}
}

// get returns the value stored under k and counts a hit or a miss.
func (c *lru[K, V]) get(k K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[k]
	if !ok {
		c.stats.Misses++
		var zero V
		return zero, false
	}
	c.stats.Hits++
	c.order.MoveToFront(el)
	return el.Value.(*lruEntry[K, V]).value, true
}

// add stores v under k unless k is there already (a concurrent miss stored
// the same answer), then evicts down to the bound. A value larger than the
// whole bound is not stored.
func (c *lru[K, V]) add(k K, v V, bytes int64) {
	if bytes > c.maxBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[k]; ok {
		return
	}
	c.entries[k] = c.order.PushFront(&lruEntry[K, V]{key: k, value: v, bytes: bytes})
	c.stats.Bytes += bytes
	for c.stats.Bytes > c.maxBytes {
		last := c.order.Back()
		old := last.Value.(*lruEntry[K, V])
		c.order.Remove(last)
		delete(c.entries, old.key)
		c.stats.Bytes -= old.bytes
	}
	c.stats.Entries = len(c.entries)
}

// remove drops the entry under k, if there is one.
func (c *lru[K, V]) remove(k K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[k]
	if !ok {
		return
	}
	c.order.Remove(el)
	delete(c.entries, k)
	c.stats.Bytes -= el.Value.(*lruEntry[K, V]).bytes
	c.stats.Entries = len(c.entries)
}

// clear drops every entry; the counts of hits and misses stay.
func (c *lru[K, V]) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.entries)
	c.order.Init()
	c.stats.Entries, c.stats.Bytes = 0, 0
}

func (c *lru[K, V]) snapshot() CacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}
