package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/crowsnest-dev/crowsnest/test/support/kubetest"
	"github.com/crowsnest-dev/crowsnest/test/support/pgtest"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/authz"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/service"
)

// BenchmarkScopedList lists the first page of 50 reports for a user
// allowed to list reports in 50 of 2,000 namespaces, with 5,000 running
// images (image i runs in namespace i mod 2,000), authorized against a
// real kube-apiserver (envtest, real RBAC: one RoleBinding per allowed
// namespace). The user comes through the trusted-proxy headers, so the
// cost measured is the SubjectAccessReviews and the scoped SQL, not
// TokenReview. "warm": the scope is cached (the second request onwards);
// "cold-all": no cache and --read-auth-namespaces=all, so every request
// makes one cluster-wide and 2,000 namespace SubjectAccessReviews (8 at a
// time); "cold-rbac": no cache, the RBAC index (the default), so one
// cluster-wide and one per namespace with a RoleBinding naming the user
// (50). sars/op counts the reviews each request made. Smoke mode: 5 of
// 200 namespaces, 500 images.
func BenchmarkScopedList(b *testing.B) {
	namespaces, allowed, images := 2_000, 50, 5_000
	if smoke {
		namespaces, allowed, images = 200, 5, 500
	}
	cfg, stop, err := kubetest.Start()
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = stop() }()
	cfg.QPS, cfg.Burst = 1000, 2000
	kc := kubernetes.NewForConfigOrDie(cfg)
	var sars atomic.Int64
	counted := rest.CopyConfig(cfg)
	counted.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/subjectaccessreviews") {
				sars.Add(1)
			}
			return rt.RoundTrip(r)
		})
	})
	ckc := kubernetes.NewForConfigOrDie(counted)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if _, err := kc.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "reports-reader"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"crowsnest.dev"}, Resources: []string{"reports"}, Verbs: []string{"list"}}}},
		metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	for i := range allowed {
		ns := fmt.Sprintf("ns-%04d", i*(namespaces/allowed))
		if _, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		if _, err := kc.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "bench-user"},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "reports-reader"},
			Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: "bench-user"}}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	dsn := pgtest.NewDatabase(b)
	start := func(o authz.ReadOptions, all bool) string {
		svc, err := service.New(ctx, service.Config{DatabaseURL: dsn, Reads: &service.ReadAuth{Client: ckc, Options: o, AllNamespaces: all,
			Proxy: &authz.Proxy{UserHeader: "X-Remote-User", Trusted: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}}})
		if err != nil {
			b.Fatal(err)
		}
		hs := httptest.NewServer(svc.Handler)
		b.Cleanup(func() { hs.Close(); svc.Close() })
		return hs.URL
	}
	warm := start(authz.ReadOptions{}, false)
	seed(b, dsn, images, 0)
	seedInventory(b, dsn, images, namespaces)
	coldAll := start(authz.ReadOptions{CacheTTL: time.Nanosecond}, true)
	coldRBAC := start(authz.ReadOptions{CacheTTL: time.Nanosecond}, false)

	want := 0
	for i := 1; i <= images; i++ {
		if (i%namespaces)%(namespaces/allowed) == 0 {
			want++
		}
	}
	c := httpClient(1)
	for _, tc := range []struct{ name, url string }{{"warm", warm}, {"cold-all", coldAll}, {"cold-rbac", coldRBAC}} {
		b.Run(tc.name, func(b *testing.B) {
			get := func() {
				req, _ := http.NewRequest(http.MethodGet, tc.url+"/api/v1/reports?limit=50", nil)
				req.Header.Set("X-Remote-User", "bench-user")
				out, err := do(c, req, http.StatusOK)
				if err != nil {
					b.Fatal(err)
				}
				var p struct {
					Items []struct{ Digest string }
					Total int
				}
				if err := json.Unmarshal(out, &p); err != nil || p.Total != want || len(p.Items) != min(50, want) {
					b.Fatalf("list: total %d, %d items (%v), want %d", p.Total, len(p.Items), err, want)
				}
			}
			get() // warms the cache (of "warm") and checks the answer
			lat := make([]time.Duration, b.N)
			sars0 := sars.Load()
			b.ResetTimer()
			for i := range b.N {
				t0 := time.Now()
				get()
				lat[i] = time.Since(t0)
			}
			b.StopTimer()
			b.ReportMetric(ms(p99(lat)), "p99-ms")
			b.ReportMetric(float64(sars.Load()-sars0)/float64(b.N), "sars/op")
		})
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// seedInventory writes the inventory of namespaces ns-0000… in SQL: image
// i runs in namespace i mod namespaces (one Deployment per image), and
// every namespace has its inventory_namespaces row.
func seedInventory(b *testing.B, dsn string, images, namespaces int) {
	b.Helper()
	execSeed(b, dsn,
		seedStmt{`INSERT INTO inventory (namespace, kind, name, container, digest, image, pods)
SELECT 'ns-' || lpad((i % $2::int)::text, 4, '0'), 'Deployment', 'app' || i, 'main', 'sha256:' || lpad(to_hex(i), 64, '0'), 'app:' || i, 2
FROM generate_series(1, $1::int) i`, []any{images, namespaces}},
		seedStmt{`INSERT INTO inventory_namespaces (namespace, event_time, event_id, applied_at)
SELECT 'ns-' || lpad(n::text, 4, '0'), now(), 'seed', now() FROM generate_series(0, $1::int - 1) n`, []any{namespaces}},
		seedStmt{"ANALYZE", nil})
}
