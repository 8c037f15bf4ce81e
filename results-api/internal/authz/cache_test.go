package authz

import (
	"testing"
	"time"
)

// The cache is bounded (the least recently used entry goes first) and its
// entries expire; no API server is involved.
func TestLRUBoundAndTTL(t *testing.T) {
	now := time.Unix(0, 0)
	c := newLRU[string, int](2, time.Minute, func() time.Time { return now })

	c.add("a", 1)
	c.add("b", 2)
	if v, ok := c.get("a"); !ok || v != 1 { // a is now the most recent
		t.Fatalf("get a = %d, %v", v, ok)
	}
	c.add("c", 3) // evicts b, the least recently used
	if _, ok := c.get("b"); ok {
		t.Error("b survived eviction")
	}
	if c.len() != 2 {
		t.Errorf("len %d, want 2", c.len())
	}
	c.add("a", 10) // update in place
	if v, _ := c.get("a"); v != 10 {
		t.Errorf("a = %d after update, want 10", v)
	}

	now = now.Add(59 * time.Second)
	if _, ok := c.get("c"); !ok {
		t.Error("c expired early")
	}
	now = now.Add(time.Second)
	if _, ok := c.get("c"); ok {
		t.Error("c outlived its TTL")
	}
	if c.len() != 1 {
		t.Errorf("expired entry kept: len %d", c.len())
	}
	c.remove("a")
	if _, ok := c.get("a"); ok || c.len() != 0 {
		t.Error("remove kept a")
	}
}

// Two identities that differ in any field the SubjectAccessReview sees get
// different cache keys; the order of groups does not matter.
func TestAdminKeyCoversReviewInputs(t *testing.T) {
	base := Identity{Username: "alice", UID: "u1", Groups: []string{"g1", "g2"},
		Extra: map[string][]string{"scopes": {"a"}}}
	same := base
	same.Groups = []string{"g2", "g1"}
	if adminKey(base, VerbCreate) != adminKey(same, VerbCreate) {
		t.Error("group order changed the key")
	}
	variants := map[string]Identity{
		"user":        {Username: "bob", UID: "u1", Groups: base.Groups, Extra: base.Extra},
		"uid":         {Username: "alice", UID: "u2", Groups: base.Groups, Extra: base.Extra},
		"groups":      {Username: "alice", UID: "u1", Groups: []string{"g1"}, Extra: base.Extra},
		"joined":      {Username: "alice", UID: "u1", Groups: []string{"g1g2"}, Extra: base.Extra},
		"extra value": {Username: "alice", UID: "u1", Groups: base.Groups, Extra: map[string][]string{"scopes": {"b"}}},
		"no extra":    {Username: "alice", UID: "u1", Groups: base.Groups},
	}
	for name, id := range variants {
		if adminKey(id, VerbCreate) == adminKey(base, VerbCreate) {
			t.Errorf("%s: same key as base", name)
		}
	}
	if adminKey(base, VerbCreate) == adminKey(base, VerbDelete) {
		t.Error("verb not in the key")
	}
}
