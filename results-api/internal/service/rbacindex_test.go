package service_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/crowsnest-dev/crowsnest/test/support/kubetest"
	"github.com/crowsnest-dev/crowsnest/test/support/pgtest"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/authn"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/authz"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/bomtest"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/service"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
)

// sarCounter counts the SubjectAccessReviews a client creates.
type sarCounter struct {
	n    atomic.Int64
	next http.RoundTripper
}

func (c *sarCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/subjectaccessreviews") {
		c.n.Add(1)
	}
	return c.next.RoundTrip(r)
}

// TestReadScopeFromRBACIndex: with the RBAC index (the default), a cold
// reader costs one cluster-wide SubjectAccessReview plus one per namespace
// where a RoleBinding names it — not one per inventory namespace — and
// sees exactly the namespaces RBAC grants: a binding to a role that grants
// nothing makes a candidate the review refuses; a RoleBinding added later
// shows once the informer has it (and the cached scope expired); group
// bindings (system:serviceaccounts:<ns>, groups from the proxy) count.
// Against the every-namespace path, the SAR counts fail.
func TestReadScopeFromRBACIndex(t *testing.T) {
	c := &cluster{t: t, cfg: kubetest.StartT(t)}
	c.cfg.QPS, c.cfg.Burst = 200, 400
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c.ctx, c.admin = ctx, kubernetes.NewForConfigOrDie(c.cfg)
	filler := make([]string, 30)
	for i := range filler {
		filler[i] = fmt.Sprintf("ns-%02d", i)
	}
	for _, ns := range append([]string{"users", "a", "b", "c", "d"}, filler...) {
		c.namespace(ns)
	}
	c.clusterRole("reports-reader", nil, "list")
	c.clusterRole("reports-getter", nil, "get") // grants no list
	alice := c.user("alice")
	c.user("bob")
	c.bind("a", "reports-reader", alice)
	c.bind("d", "reports-getter", alice)

	counted := rest.CopyConfig(c.cfg)
	sars := &sarCounter{}
	counted.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { sars.next = rt; return sars }
	reviewer, err := authn.New(c.cfg, authn.Options{Audience: audience})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := service.New(ctx, service.Config{DatabaseURL: pgtest.NewDatabase(t), WriteToken: adminToken,
		Reads: &service.ReadAuth{Reviewer: reviewer, Audience: audience, Client: kubernetes.NewForConfigOrDie(counted),
			Options: authz.ReadOptions{CacheTTL: 200 * time.Millisecond},
			Proxy:   &authz.Proxy{UserHeader: "X-Remote-User", GroupsHeader: "X-Remote-Group", Trusted: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(svc.Handler)
	t.Cleanup(func() { hs.Close(); svc.Close() })
	e := &readEnv{t: t, url: hs.URL, svc: svc, clock: &atomic.Int64{}}
	for i, ns := range append([]string{"a", "b", "c", "d"}, filler...) {
		inv := store.Inventory{Namespace: ns, EventID: ns, Time: time.Now(), Entries: []store.InventoryEntry{
			{Kind: "Deployment", Name: "w", Container: "c", Digest: bomtest.Digest(i + 1), Pods: 1}}}
		if _, err := svc.Store.ApplyInventory(ctx, inv); err != nil {
			t.Fatal(err)
		}
	}

	// scope reads /api/v1/access after the cached scope expired and
	// returns its namespaces and the SubjectAccessReviews it cost.
	scope := func(hdr ...string) ([]string, int64) {
		t.Helper()
		time.Sleep(250 * time.Millisecond)
		before := sars.n.Load()
		var a struct {
			Cluster    bool
			Namespaces []string
		}
		code, b := e.get("/api/v1/access", hdr...)
		if code != http.StatusOK {
			t.Fatalf("access: %d %s", code, b)
		}
		decode(t, b, &a)
		if a.Cluster {
			t.Fatalf("cluster-wide access: %s", b)
		}
		return a.Namespaces, sars.n.Load() - before
	}
	expect := func(who string, want []string, wantSARs int64, hdr ...string) {
		t.Helper()
		got, n := scope(hdr...)
		if !slices.Equal(got, want) || n != wantSARs {
			t.Errorf("%s: sees %v with %d SubjectAccessReviews, want %v with %d (1 cluster-wide + 1 per RoleBinding namespace; %d namespaces in the inventory)",
				who, got, n, want, wantSARs, 4+len(filler))
		}
	}
	aliceToken := c.token("alice")
	// a grants list; d's binding grants only get: a candidate, refused.
	expect("alice", []string{"a"}, 3, bearer(aliceToken)...)
	expect("bob, bound nowhere", nil, 1, bearer(c.token("bob"))...)

	t.Run("binding added later", func(t *testing.T) {
		e.t = t
		added := time.Now()
		c.bind("b", "reports-reader", alice)
		for {
			got, _ := scope(bearer(aliceToken)...)
			if slices.Equal(got, []string{"a", "b"}) {
				break
			}
			if time.Since(added) > 30*time.Second {
				t.Fatalf("alice's new RoleBinding in b not seen within 30s: sees %v", got)
			}
		}
		// Polls sleep out the 200ms cache TTL: the informer's part is what is left.
		t.Logf("a RoleBinding added at %s was in alice's scope %s later (informer watch + 200ms scope cache TTL)",
			added.Format(time.TimeOnly), time.Since(added).Round(time.Millisecond))
	})
	t.Run("group system:serviceaccounts:users", func(t *testing.T) {
		e.t = t
		c.bind("c", "reports-reader", rbacv1.Subject{Kind: "Group", APIGroup: "rbac.authorization.k8s.io", Name: "system:serviceaccounts:users"})
		deadline := time.Now().Add(30 * time.Second)
		for got, _ := scope(bearer(c.token("bob"))...); !slices.Equal(got, []string{"c"}); got, _ = scope(bearer(c.token("bob"))...) {
			if time.Now().After(deadline) {
				t.Fatalf("bob through his namespace's group: sees %v, want [c]", got)
			}
		}
		expect("bob through the group", []string{"c"}, 2, bearer(c.token("bob"))...)
		expect("alice through the group and her own", []string{"a", "b", "c"}, 5, bearer(aliceToken)...)
	})
	t.Run("proxied user and group", func(t *testing.T) {
		e.t = t
		c.bind("b", "reports-reader", rbacv1.Subject{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: "dave"})
		c.bind("d", "reports-reader", rbacv1.Subject{Kind: "Group", APIGroup: "rbac.authorization.k8s.io", Name: "team-d"})
		deadline := time.Now().Add(30 * time.Second)
		for {
			got, n := scope("X-Remote-User", "dave", "X-Remote-Group", "team-d")
			if slices.Equal(got, []string{"b", "d"}) && n == 3 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("dave of team-d: sees %v with %d reviews, want [b d] with 3", got, n)
			}
		}
		expect("dave without his group", []string{"b"}, 2, "X-Remote-User", "dave")
	})
}
