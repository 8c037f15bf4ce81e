package service_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/crowsnest-dev/crowsnest/test/support"
	"github.com/crowsnest-dev/crowsnest/test/support/kubetest"
	"github.com/crowsnest-dev/crowsnest/test/support/pgtest"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/apitest"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/authn"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/bomtest"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/exception"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/service"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
)

// exceptionEnv is a kube-apiserver with the chart's CRDs and real RBAC,
// and results-api reading with --read-auth=kubernetes and --exceptions.
type exceptionEnv struct {
	*readEnv
	c  *cluster
	dc dynamic.Interface
	// configure, when set, changes results-api's configuration before start.
	configure func(*service.Config)
}

// shared runs in team-a and team-b; bOnly in team-b only.
var shared, bOnly = bomtest.Digest(101), bomtest.Digest(102)

// newExceptionEnv starts the cluster and stores the reports; start
// results-api with start once the exceptions exist.
func newExceptionEnv(t *testing.T) *exceptionEnv {
	t.Helper()
	root, err := support.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	cfg := kubetest.StartT(t, kubetest.WithCRDs(filepath.Join(root, "helm", "crowsnest", "crds")))
	cfg.QPS, cfg.Burst = 200, 400
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	c := &cluster{t: t, ctx: ctx, cfg: cfg, admin: kubernetes.NewForConfigOrDie(cfg)}
	for _, ns := range []string{"users", "team-a", "team-b"} {
		c.namespace(ns)
	}
	c.clusterRole("reports-reader", nil, "list")
	c.bind("team-a", "reports-reader", c.user("alice"))
	c.bind("team-b", "reports-reader", c.user("bob"))
	c.bind("", "reports-reader", c.user("carol"))
	return &exceptionEnv{readEnv: &readEnv{t: t}, c: c, dc: dynamic.NewForConfigOrDie(cfg)}
}

// start runs results-api, stores the two reports and applies the inventory.
func (e *exceptionEnv) start() {
	t, c := e.t, e.c
	reviewer, err := authn.New(c.cfg, authn.Options{Audience: audience})
	if err != nil {
		t.Fatal(err)
	}
	cfg := service.Config{DatabaseURL: pgtest.NewDatabase(t), WriteToken: adminToken,
		Reads:      &service.ReadAuth{Reviewer: reviewer, Audience: audience, Client: kubernetes.NewForConfigOrDie(c.cfg)},
		Exceptions: &service.Exceptions{Client: e.dc, AuditInterval: 100 * time.Millisecond}}
	if e.configure != nil {
		e.configure(&cfg)
	}
	svc, err := service.New(c.ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(svc.Handler)
	t.Cleanup(func() { svc.Hub.Close(); hs.Close(); svc.Close() })
	e.url, e.svc = hs.URL, svc
	srv := &apitest.Server{URL: hs.URL, Token: adminToken}
	srv.PutReport(t, shared, bomtest.BOM(
		bomtest.Vuln{ID: "CVE-2024-0001", Severity: "high", Package: "openssl", Version: "3.0.1"},
		bomtest.Vuln{ID: "CVE-2024-0002", Severity: "high", Package: "zlib", Version: "1.2", Fix: "1.3"},
		bomtest.Vuln{ID: "CVE-2024-0003", Severity: "medium", Package: "musl", Version: "1.2.5"},
		bomtest.Vuln{ID: "CVE-2024-0004", Severity: "low", Package: "busybox", Version: "1.36"},
		bomtest.Vuln{ID: "CVE-2024-0005", Severity: "critical", Package: "curl", Version: "8.0", KEV: true}))
	srv.PutReport(t, bOnly, bomtest.BOM(bomtest.Vuln{ID: "CVE-2024-0001", Severity: "high", Package: "openssl", Version: "3.0.1"}))
	for ns, digests := range map[string][]string{"team-a": {shared}, "team-b": {shared, bOnly}} {
		inv := store.Inventory{Namespace: ns, EventID: ns, Time: time.Now().Add(-time.Minute)}
		for i, d := range digests {
			inv.Entries = append(inv.Entries, store.InventoryEntry{Kind: "Deployment", Name: "w" + string(rune('a'+i)), Container: "c", Digest: d, Pods: 1})
		}
		if _, err := svc.Store.ApplyInventory(c.ctx, inv); err != nil {
			t.Fatal(err)
		}
	}
}

// except creates an exception (cluster-scoped when namespace is "") for
// ids, not_affected unless mutate says otherwise.
func (e *exceptionEnv) except(namespace, name string, ids []string, mutate func(spec map[string]any)) {
	e.t.Helper()
	anyIDs := make([]any, len(ids))
	for i, id := range ids {
		anyIDs[i] = id
	}
	spec := map[string]any{"vulnerabilities": anyIDs, "status": "not_affected", "justification": "vulnerable_code_not_in_execute_path",
		"statement": "not reachable", "expiresAt": time.Now().Add(30 * 24 * time.Hour).UTC().Format(time.RFC3339)}
	if mutate != nil {
		mutate(spec)
	}
	kind, res := exception.KindNamespaced, e.dc.Resource(exception.NamespacedResource).Namespace(namespace)
	if namespace == "" {
		kind, res = exception.KindCluster, e.dc.Resource(exception.ClusterResource).Namespace("")
	}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "crowsnest.dev/v1alpha1", "kind": kind, "spec": spec}}
	u.SetName(name)
	if _, err := res.Create(e.c.ctx, u, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("create exception %s/%s: %v", namespace, name, err)
	}
}

// detail is what the report detail says about suppression.
type detail struct {
	ActiveFindings, SuppressedFindings int
	Findings                           []struct {
		ID          string
		Suppression *struct {
			Exception struct{ Kind, Namespace, Name string }
			Status    string
		}
	}
}

// findings returns the ids of the findings of digest the caller sees with
// query (e.g. "suppressed=true"), and the detail.
func (e *exceptionEnv) findings(token, digest, query string) ([]string, detail) {
	e.t.Helper()
	code, b := e.get("/api/v1/reports/"+digest+"?"+query, "Authorization", "Bearer "+token)
	if code != http.StatusOK {
		e.t.Fatalf("GET report %s?%s: %d %s", digest, query, code, b)
	}
	var d detail
	decode(e.t, b, &d)
	var ids []string
	for _, f := range d.Findings {
		ids = append(ids, f.ID)
	}
	slices.Sort(ids)
	return ids, d
}
