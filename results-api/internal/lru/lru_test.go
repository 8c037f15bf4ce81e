package lru

import (
	"testing"
	"time"
)

// The cache is bounded (the least recently used entry goes first) and its
// entries expire; no API server is involved.
func TestLRUBoundAndTTL(t *testing.T) {
	now := time.Unix(0, 0)
	c := New[string, int](2, time.Minute, func() time.Time { return now })

	c.Add("a", 1)
	c.Add("b", 2)
	if v, ok := c.Get("a"); !ok || v != 1 { // a is now the most recent
		t.Fatalf("get a = %d, %v", v, ok)
	}
	c.Add("c", 3) // evicts b, the least recently used
	if _, ok := c.Get("b"); ok {
		t.Error("b survived eviction")
	}
	if c.Len() != 2 {
		t.Errorf("len %d, want 2", c.Len())
	}
	c.Add("a", 10) // update in place
	if v, _ := c.Get("a"); v != 10 {
		t.Errorf("a = %d after update, want 10", v)
	}

	now = now.Add(59 * time.Second)
	if _, ok := c.Get("c"); !ok {
		t.Error("c expired early")
	}
	now = now.Add(time.Second)
	if _, ok := c.Get("c"); ok {
		t.Error("c outlived its TTL")
	}
	if c.Len() != 1 {
		t.Errorf("expired entry kept: len %d", c.Len())
	}
	c.Remove("a")
	if _, ok := c.Get("a"); ok || c.Len() != 0 {
		t.Error("remove kept a")
	}
}
