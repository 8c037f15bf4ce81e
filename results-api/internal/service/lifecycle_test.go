package service_test

import (
	"net/http"
	"testing"

	"github.com/crowsnest-dev/crowsnest/results-api/api"
)

// TestLifecyclePerTenant plays bob (team b, real RBAC and TokenReview) asking
// for the finding ages and times to fix of namespace a, which alice reads:
// he gets b's figures only, and nothing for a, not even its name; alice
// sees a's, including the image both namespaces run.
func TestLifecyclePerTenant(t *testing.T) {
	c := newCluster(t)
	for _, ns := range []string{"users", "a", "b", "c"} {
		c.namespace(ns)
	}
	c.clusterRole("reports-reader", nil, "list")
	alice, bob := c.user("alice"), c.user("bob")
	c.bind("a", "reports-reader", alice)
	c.bind("b", "reports-reader", bob)
	e := startReads(t, c)
	bobToken, aliceToken := c.token("bob"), c.token("alice")

	lifecycle := func(token, query string) api.Lifecycle {
		t.Helper()
		code, b := e.get("/api/v1/lifecycle"+query, bearer(token)...)
		if code != http.StatusOK {
			t.Fatalf("GET /lifecycle%s: %d %s", query, code, b)
		}
		var out api.Lifecycle
		decode(t, b, &out)
		return out
	}
	for _, q := range []string{"", "?namespace=a", "?namespace=c"} {
		for _, n := range lifecycle(bobToken, q).Namespaces {
			if n.Namespace != "b" {
				t.Errorf("bob (namespace b) asking %q reads namespace %s: %+v", q, n.Namespace, n)
			}
		}
	}
	got := lifecycle(bobToken, "")
	if len(got.Namespaces) != 1 || got.Namespaces[0].Open == 0 || got.Namespaces[0].Ages.D0to7 != got.Namespaces[0].Open {
		t.Errorf("bob's own figures %+v, want namespace b with its findings, all first seen today", got.Namespaces)
	}
	if a := lifecycle(aliceToken, ""); len(a.Namespaces) != 1 || a.Namespaces[0].Namespace != "a" || a.Namespaces[0].Open == 0 {
		t.Errorf("alice's figures %+v, want namespace a's", a.Namespaces)
	}
	if code, _ := e.get("/api/v1/lifecycle"); code != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", code)
	}
}
