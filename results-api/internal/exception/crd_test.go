package exception_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/exception"
	"github.com/crowsnest-dev/crowsnest/test/support"
	"github.com/crowsnest-dev/crowsnest/test/support/kubetest"
)

// startWithCRDs runs a kube-apiserver with the chart's CRDs installed (the
// files users install).
func startWithCRDs(t *testing.T) *rest.Config {
	t.Helper()
	root, err := support.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return kubetest.StartT(t, kubetest.WithCRDs(filepath.Join(root, "helm", "crowsnest", "crds")))
}

// obj builds an exception resource; mutate adjusts its spec.
func obj(kind, namespace, name string, mutate func(spec map[string]any)) *unstructured.Unstructured {
	spec := map[string]any{
		"vulnerabilities": []any{"CVE-2024-0001"},
		"status":          "not_affected",
		"justification":   "vulnerable_code_not_in_execute_path",
		"statement":       "the parser is never fed untrusted input",
		"expiresAt":       time.Now().Add(30 * 24 * time.Hour).UTC().Format(time.RFC3339),
	}
	if mutate != nil {
		mutate(spec)
	}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "crowsnest.dev/v1alpha1", "kind": kind, "spec": spec}}
	u.SetName(name)
	u.SetNamespace(namespace)
	return u
}

func create(ctx context.Context, dc dynamic.Interface, u *unstructured.Unstructured) error {
	if u.GetNamespace() == "" {
		_, err := dc.Resource(exception.ClusterResource).Create(ctx, u, metav1.CreateOptions{})
		return err
	}
	_, err := dc.Resource(exception.NamespacedResource).Namespace(u.GetNamespace()).Create(ctx, u, metav1.CreateOptions{})
	return err
}

// TestAdmission: the API server refuses, by the CRDs' schema and CEL rules,
// an exception without a reason, a not_affected without justification, an
// accepted risk without an action statement, no or malformed ids and
// digests; it admits well-formed ones, and the Watcher reads them.
func TestAdmission(t *testing.T) {
	cfg := startWithCRDs(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	kc, dc := kubernetes.NewForConfigOrDie(cfg), dynamic.NewForConfigOrDie(cfg)
	if _, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	refused := map[string]struct {
		mutate func(map[string]any)
		want   string
	}{
		"no reason":                 {func(s map[string]any) { delete(s, "statement") }, "statement"},
		"blank reason":              {func(s map[string]any) { s["statement"] = "   " }, "must not be blank"},
		"not_affected, no why":      {func(s map[string]any) { delete(s, "justification") }, "needs a justification"},
		"unknown justification":     {func(s map[string]any) { s["justification"] = "trust_me" }, "justification"},
		"affected without action":   {func(s map[string]any) { s["status"] = "affected"; delete(s, "justification") }, "actionStatement"},
		"justification on affected": {func(s map[string]any) { s["status"] = "affected"; s["actionStatement"] = "x" }, "only for status not_affected"},
		"no vulnerability":          {func(s map[string]any) { s["vulnerabilities"] = []any{} }, "vulnerabilities"},
		"malformed id":              {func(s map[string]any) { s["vulnerabilities"] = []any{"not an id"} }, "vulnerabilities"},
		"malformed digest":          {func(s map[string]any) { s["images"] = []any{"nginx:latest"} }, "images"},
		"malformed purl":            {func(s map[string]any) { s["packages"] = []any{"openssl"} }, "packages"},
		"no expiry":                 {func(s map[string]any) { delete(s, "expiresAt") }, "expiresAt"},
		"unknown status":            {func(s map[string]any) { s["status"] = "ignored" }, "status"},
	}
	for name, tc := range refused {
		err := create(ctx, dc, obj(exception.KindNamespaced, "team-a", "bad", tc.mutate))
		if err == nil {
			t.Errorf("%s: admitted", name)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: refused for another reason (want %q): %v", name, tc.want, err)
		}
	}
	// The cluster-scoped kind has the same rules.
	if err := create(ctx, dc, obj(exception.KindCluster, "", "bad", func(s map[string]any) { delete(s, "statement") })); err == nil {
		t.Error("cluster exception without a reason admitted")
	}

	accepted := obj(exception.KindNamespaced, "team-a", "parser", func(s map[string]any) {
		s["vulnerabilities"] = []any{"CVE-2024-0001", "GHSA-abcd-efgh-ijkl"}
		s["packages"] = []any{"pkg:deb/debian/libxml2@*"}
		s["owner"], s["ticket"], s["expiredOnFix"] = "team-a", "JIRA-1", true
	})
	risk := obj(exception.KindCluster, "", "accepted-risk", func(s map[string]any) {
		s["status"], s["actionStatement"] = "affected", "fix ships with base image 12.8"
		delete(s, "justification")
	})
	for _, u := range []*unstructured.Unstructured{accepted, risk} {
		if err := create(ctx, dc, u); err != nil {
			t.Fatalf("%s refused: %v", u.GetName(), err)
		}
	}

	w, err := exception.NewWatcher(dc, exception.Policy{MaxLifetime: exception.DefaultMaxLifetime})
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	defer func() { stop(); w.Shutdown() }()
	if err := w.Start(wctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	all := w.Set().All()
	if len(all) != 2 || all[0].Ref != (exception.Ref{Kind: exception.KindCluster, Name: "accepted-risk"}) ||
		all[1].Ref != (exception.Ref{Kind: exception.KindNamespaced, Namespace: "team-a", Name: "parser"}) {
		t.Fatalf("watcher read %+v", all)
	}
	p := all[1]
	if p.Vulnerabilities[1] != "GHSA-ABCD-EFGH-IJKL" || !p.ExpiredOnFix || p.Owner != "team-a" || p.Created.IsZero() ||
		p.State(time.Now(), exception.DefaultMaxLifetime) != exception.Active {
		t.Errorf("exception read as %+v", p)
	}
}
