package authz

import (
	"testing"
)

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
