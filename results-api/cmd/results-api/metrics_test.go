package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/crowsnest-dev/crowsnest/test/support/kubetest"
	"github.com/crowsnest-dev/crowsnest/test/support/pgtest"
)

// TestMetricsRefuseUnauthorizedScrapers plays the attacker against the
// binary with the chart's defaults (--read-auth=kubernetes, no
// --metrics-auth): an anonymous scrape, a ServiceAccount that may read
// every report but not scrape, and a scraper's token for another audience
// all fail to get /metrics (401/403) — on the API listener and on
// --metrics-listen — while the ServiceAccount bound to the metrics-reader
// rule (nonResourceURLs /metrics, get; a real kube-apiserver with RBAC
// decides) gets them, and the probes stay open.
func TestMetricsRefuseUnauthorizedScrapers(t *testing.T) {
	cfg := kubetest.StartT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	kc := kubernetes.NewForConfigOrDie(cfg)
	create := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "monitoring"}}, metav1.CreateOptions{})
	create(err)
	for _, sa := range []string{"prometheus", "reader"} {
		_, err = kc.CoreV1().ServiceAccounts("monitoring").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{})
		create(err)
	}
	bind := func(name string, rule rbacv1.PolicyRule, sa string) {
		_, err := kc.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name},
			Rules: []rbacv1.PolicyRule{rule}}, metav1.CreateOptions{})
		create(err)
		_, err = kc.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: "monitoring"}}}, metav1.CreateOptions{})
		create(err)
	}
	bind("crowsnest-metrics-reader", rbacv1.PolicyRule{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}, "prometheus")
	bind("reports-reader", rbacv1.PolicyRule{APIGroups: []string{"crowsnest.dev"}, Resources: []string{"reports"}, Verbs: []string{"list"}}, "reader")
	token := func(sa string, audiences ...string) string {
		tr, err := kc.CoreV1().ServiceAccounts("monitoring").CreateToken(ctx, sa, &authv1.TokenRequest{Spec: authv1.TokenRequestSpec{
			Audiences: audiences}}, metav1.CreateOptions{})
		create(err)
		return tr.Status.Token
	}
	prometheus, reader := token("prometheus"), token("reader")
	readerForAPI := token("reader", "crowsnest-results-api")
	prometheusForAPI := token("prometheus", "crowsnest-results-api")

	kubeconfig := writeEnvtestKubeconfig(t, cfg)
	db := pgtest.NewDatabase(t)
	client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{
		// Self-signed, as the chart's ServiceMonitor accepts it.
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}}} //nolint:gosec // the test's own server
	scrape := func(t *testing.T, url, token string) (int, string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"api listener", nil},
		{"metrics listener", []string{"--metrics-listen", "127.0.0.1:0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"--read-auth=kubernetes", "--listen", "127.0.0.1:0", "--database-url", db, "--kubeconfig", kubeconfig}, tc.args...)
			base, logs, stop := started(t, args, nil)
			defer func() {
				if err := stop(); err != nil {
					t.Error(err)
				}
			}()
			metrics := base + "/metrics"
			if tc.args != nil {
				metrics = "https://" + metricsAddr(t, logs.String()) + "/metrics"
			}
			for _, attack := range []struct {
				who   string
				token string
				want  int
			}{
				{"anonymous", "", http.StatusUnauthorized},
				{"garbage token", "not-a-token", http.StatusUnauthorized},
				{"reader of every report, not a scraper", reader, http.StatusForbidden},
				{"reader's results-api token", readerForAPI, http.StatusUnauthorized},
				{"scraper's token for another audience", prometheusForAPI, http.StatusUnauthorized},
			} {
				code, body := scrape(t, metrics, attack.token)
				if code != attack.want || strings.Contains(body, "crowsnest_") {
					t.Errorf("%s: GET /metrics = %d (want %d), body %.200q", attack.who, code, attack.want, body)
				}
			}
			code, body := scrape(t, metrics, prometheus)
			if code != http.StatusOK || !strings.Contains(body, "crowsnest_results_api_") {
				t.Fatalf("prometheus, bound to the metrics-reader rule: GET /metrics = %d, body %.200q", code, body)
			}
			for _, probe := range []string{"/healthz", "/readyz"} {
				if code, body := scrape(t, base+probe, ""); code != http.StatusOK {
					t.Errorf("anonymous %s = %d %s, want 200: probes stay open", probe, code, body)
				}
			}
		})
	}
}

// metricsAddr is the address of the "serving metrics" log line.
func metricsAddr(t *testing.T, logs string) string {
	t.Helper()
	for _, line := range strings.Split(logs, "\n") {
		var rec struct{ Msg, Addr string }
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "serving metrics" {
			return rec.Addr
		}
	}
	t.Fatalf("no metrics listener logged:\n%s", logs)
	return ""
}

// writeEnvtestKubeconfig writes a kubeconfig for cfg (the envtest admin).
func writeEnvtestKubeconfig(t *testing.T, cfg *rest.Config) string {
	t.Helper()
	api := clientcmdapi.NewConfig()
	api.Clusters["c"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	api.AuthInfos["u"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	api.Contexts["x"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	api.CurrentContext = "x"
	p := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*api, p); err != nil {
		t.Fatal(err)
	}
	return p
}
