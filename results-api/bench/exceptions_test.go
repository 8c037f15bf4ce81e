package bench

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-chi/chi/v5/middleware"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/crowsnest-dev/crowsnest/test/support"
	"github.com/crowsnest-dev/crowsnest/test/support/kubetest"
	"github.com/crowsnest-dev/crowsnest/test/support/pgtest"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/apitest"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/exception"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/httpapi"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/service"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/vulnmetrics"
)

// BenchmarkExceptionQuery reads 10,000 seeded reports (20 findings each,
// each image running in one of 200 namespaces) with 1,000 exceptions
// (990 namespaced, 10 cluster-wide) and 100 imported OpenVEX documents of
// 20 statements (90 namespaced, 10 cluster-wide) watched from a real
// kube-apiserver: the list page and the stats (both counting what the
// exceptions suppress; the stats from a snapshot, and again each after a
// report stored through the API, so computed afresh), a report detail with suppressed findings
// (counts and the suppressed filter), the CVE view, one of a CVE the
// documents decide, and the audit. Each case reports its first request
// (first-ms) and the SQL statements requests ran (stmts/op). (Smoke mode: 500 reports of 5
// findings, 100 exceptions, 50 documents.)
func BenchmarkExceptionQuery(b *testing.B) {
	reports, perReport, exceptions, vexDocs := 10_000, 20, 1_000, 100
	if smoke {
		reports, perReport, exceptions, vexDocs = 500, 5, 100, 50
	}
	cfg := exceptionAPIServer(b)
	dc := dynamic.NewForConfigOrDie(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	createExceptions(ctx, b, cfg, exceptions)
	createVEXDocuments(ctx, b, dc, vexDocs, reports)

	var stmts atomic.Int64 // the statements requests run (not background jobs')
	srv := apitest.Start(b, func(c *service.Config) {
		c.Exceptions = &service.Exceptions{Client: dc}
		c.OnStatement = func(ctx context.Context) {
			if middleware.GetReqID(ctx) != "" {
				stmts.Add(1)
			}
		}
	})
	seed(b, srv.DatabaseURL, reports, perReport)
	seedInventory(b, srv.DatabaseURL, reports, 200)
	c := httpClient(1)
	get := func(path string) []byte {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		out, err := do(c, req, http.StatusOK)
		if err != nil {
			b.Fatal(err)
		}
		return out
	}
	// Image 42 runs in ns-0042, whose exception covers its CVE-2025-00425
	// and whose VEX document its CVE-2025-00556 (in smoke mode too).
	digest := fmt.Sprintf("sha256:%064x", 42)
	// change stores a report through the API (untimed): the next /stats
	// computes its snapshot afresh.
	change := func() {
		srv.PutReport(b, fmt.Sprintf("sha256:%064x", reports+1), nil)
	}
	cases := []struct {
		name, path, mustContain string
		before                  func()
	}{
		{"list-page50", "/api/v1/reports?limit=50", fmt.Sprintf(`"total":%d`, reports), nil},
		{"stats", "/api/v1/stats", `"topVulnerabilities":`, nil},
		{"stats-after-change", "/api/v1/stats", `"topVulnerabilities":`, change},
		{"report-detail", "/api/v1/reports/" + digest, `"suppressedFindings":2`, nil},
		{"report-detail-suppressed", "/api/v1/reports/" + digest + "?suppressed=true", `"suppression":{`, nil},
		{"vulnerability", "/api/v1/vulnerabilities/CVE-2025-00042?suppressed=all", `"suppressedImages":`, nil},
		{"vulnerability-vex", "/api/v1/vulnerabilities/CVE-2025-00556?suppressed=all", `"vex":{`, nil},
		{"audit", "/api/v1/exceptions/audit?state=stale", `"counts":`, nil},
	}
	for _, tc := range cases {
		var first time.Duration // the case's first request (for stats: no snapshot yet)
		b.Run(tc.name, func(b *testing.B) {
			lat := make([]time.Duration, b.N)
			var ran int64
			b.ResetTimer()
			for i := range b.N {
				if tc.before != nil {
					b.StopTimer()
					tc.before()
					b.StartTimer()
				}
				n0, t0 := stmts.Load(), time.Now()
				out := get(tc.path)
				lat[i] = time.Since(t0)
				ran += stmts.Load() - n0
				if first == 0 {
					first = lat[i]
				}
				if i == 0 && !strings.Contains(string(out), tc.mustContain) {
					b.Fatalf("GET %s: %.300s lacks %s", tc.path, out, tc.mustContain)
				}
			}
			b.StopTimer()
			b.ReportMetric(ms(p99(lat)), "p99-ms")
			b.ReportMetric(ms(first), "first-ms")
			b.ReportMetric(float64(ran)/float64(b.N), "stmts/op")
		})
	}
}

// exceptionAPIServer starts a kube-apiserver with the chart's CRDs, stopped
// at the benchmark's end, and returns a client config allowed to write
// thousands of objects quickly.
func exceptionAPIServer(b *testing.B) *rest.Config {
	b.Helper()
	root, err := support.RepoRoot()
	if err != nil {
		b.Fatal(err)
	}
	cfg, stop, err := kubetest.Start(kubetest.WithCRDs(filepath.Join(root, "helm", "crowsnest", "crds")))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = stop() })
	cfg.QPS, cfg.Burst = 1000, 2000
	return cfg
}

// createExceptions writes n exceptions: 10 cluster-wide ones (one on
// CVE-2025-00042, packages pkg1–pkg9 only), the others namespaced in
// ns-0000…ns-0199 on the CVE id of their index; ns-0042 has one on
// CVE-2025-00425 (image 42's first finding).
func createExceptions(ctx context.Context, b *testing.B, cfg *rest.Config, n int) {
	b.Helper()
	kc, dc := kubernetes.NewForConfigOrDie(cfg), dynamic.NewForConfigOrDie(cfg)
	for i := range 200 {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ns-%04d", i)}}
		if _, err := kc.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	expires := time.Now().Add(60 * 24 * time.Hour).UTC().Format(time.RFC3339)
	for k := range n {
		spec := map[string]any{"status": "not_affected", "justification": "vulnerable_code_not_present",
			"statement": "benchmark", "expiresAt": expires, "vulnerabilities": []any{fmt.Sprintf("CVE-2025-%05d", k%2000)}}
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "crowsnest.dev/v1alpha1", "spec": spec}}
		u.SetName(fmt.Sprintf("x%04d", k))
		res := dc.Resource(exception.NamespacedResource).Namespace(fmt.Sprintf("ns-%04d", k%200))
		u.SetKind(exception.KindNamespaced)
		switch {
		case k < 10:
			spec["vulnerabilities"], spec["packages"] = []any{"CVE-2025-00042"}, []any{fmt.Sprintf("pkg:apk/alpine/pkg%d@*", k)}
			res = dc.Resource(exception.ClusterResource).Namespace("")
			u.SetKind(exception.KindCluster)
		case k == 10:
			spec["vulnerabilities"] = []any{"CVE-2025-00425"}
			res = dc.Resource(exception.NamespacedResource).Namespace("ns-0042")
		}
		if _, err := res.Create(ctx, u, metav1.CreateOptions{}); err != nil {
			b.Fatalf("create exception %d: %v", k, err)
		}
	}
}

// BenchmarkVulnMetricsRefreshExceptions is one refresh of the
// vulnerability metrics over BenchmarkExceptionQuery's 10,000 reports of
// 20 findings (each image running in one of 200 namespaces), counting
// every finding and then only the active ones under its 1,000 exceptions
// (990 namespaced) watched from a real kube-apiserver: the cost of the
// cluster view's and every namespace's view's suppression, as statements
// (stmts/op) and time (p99-ms). (Smoke mode: 500 reports of 5 findings,
// 100 exceptions.)
func BenchmarkVulnMetricsRefreshExceptions(b *testing.B) {
	reports, perReport, exceptions := 10_000, 20, 1_000
	if smoke {
		reports, perReport, exceptions = 500, 5, 100
	}
	cfg := exceptionAPIServer(b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	createExceptions(ctx, b, cfg, exceptions)
	w, err := exception.NewWatcher(dynamic.NewForConfigOrDie(cfg), exception.Policy{MaxLifetime: exception.DefaultMaxLifetime})
	if err != nil {
		b.Fatal(err)
	}
	if err := w.Start(ctx, time.Minute); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(w.Shutdown)
	if got := len(w.Set().All()); got != exceptions {
		b.Fatalf("the watcher holds %d exceptions, want %d", got, exceptions)
	}
	dsn, drop, err := pgtest.CreateDatabase(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = drop() })
	var stmts atomic.Int64
	st, err := store.Open(ctx, dsn, store.Options{OnStatement: func(context.Context) { stmts.Add(1) }})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	seed(b, dsn, reports, perReport)
	seedInventory(b, dsn, reports, 200)
	api := httpapi.New(httpapi.Config{Store: st, Exceptions: w})
	for _, tc := range []struct {
		name     string
		suppress func() vulnmetrics.Suppression
	}{
		{"every-finding", nil},
		{"active-findings", api.VulnMetricsSuppression},
	} {
		r := vulnmetrics.New(st, vulnmetrics.NewCollector(), vulnmetrics.Options{Suppress: tc.suppress})
		b.Run(tc.name, func(b *testing.B) {
			lat := make([]time.Duration, 0, b.N)
			n0 := stmts.Load()
			for b.Loop() {
				t0 := time.Now()
				if err := r.Refresh(ctx); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			b.ReportMetric(float64(stmts.Load()-n0)/float64(len(lat)), "stmts/op")
			b.ReportMetric(ms(p99(lat)), "p99-ms")
		})
	}
}
