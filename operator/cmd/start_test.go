package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/test/support"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
	"github.com/crowsnest-dev/crowsnest/operator/internal/controller"
	"github.com/crowsnest-dev/crowsnest/test/support/kubetest"
	"github.com/crowsnest-dev/crowsnest/test/support/natstest"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	return ln.Addr().String()
}

// TestRunServesProbesAndMetrics starts the whole binary's wiring on a real
// API server (envtest) with leader election, a namespaced cache (from the
// environment) and authenticated metrics, then stops it. Scrapes also play
// the attacker: no token, a forged one, one that may not read /metrics, and
// plain HTTP.
func TestRunServesProbesAndMetrics(t *testing.T) {
	cfg := kubetest.StartT(t, kubetest.WithCRDs(filepath.Join("..", "config", "crd", "bases")))
	_, natsURL := natstest.StartT(t)
	prometheus, intruder := metricsTokens(t, cfg)
	kube := kubeClient(t, cfg)
	for _, ns := range []string{"default", "elsewhere"} {
		if ns != "default" {
			if err := kube.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
				t.Fatal(err)
			}
		}
		if err := kube.Create(context.Background(), &crowsnestv1alpha1.Scanner{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "s"}}); err != nil {
			t.Fatal(err)
		}
	}
	// freeAddr's ports are free only until it closes them: another test
	// binary (an envtest etcd or API server) can take one before the
	// operator binds it. run then fails with EADDRINUSE before serving, and
	// the test starts it again on new ports, a bounded number of times.
	var (
		probe, metrics string
		cancel         context.CancelFunc
		done           chan error
		logs           support.Buffer
	)
	env := map[string]string{"CROWSNEST_WATCH_NAMESPACES": "default, kube-public"}
	start := func() {
		probe, metrics = freeAddr(t), freeAddr(t)
		var ctx context.Context
		ctx, cancel = context.WithCancel(context.Background())
		done = make(chan error, 1)
		go func(done chan<- error, probe, metrics string) {
			done <- run(ctx, []string{
				"--results-api-url=http://127.0.0.1:1", "--uploader-image=u", "--nats-url=" + natsURL,
				"--health-probe-bind-address=" + probe, "--metrics-bind-address=" + metrics,
				"--leader-elect", "--leader-election-namespace=default",
			}, func(k string) string { return env[k] }, io.Discard, &logs, func() (*rest.Config, error) { return cfg, nil })
		}(done, probe, metrics)
	}
	start()
	defer func() { cancel() }()
	// The metrics endpoint's certificate is self-signed (no --metrics-cert-dir).
	httpc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	scrape := func(token string) (int, []byte, error) {
		req, err := http.NewRequest(http.MethodGet, "https://"+metrics+"/metrics", nil)
		if err != nil {
			return 0, nil, err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := httpc.Do(req)
		if err != nil {
			return 0, nil, err
		}
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, body, err
	}
	// The controller's series appear once leader election is won and the
	// controller has started, which can lag readiness on a loaded machine:
	// poll for them within the deadline.
	metricsReady := func() error {
		resp, err := httpc.Get("http://" + probe + "/readyz")
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/readyz: HTTP %d", resp.StatusCode)
		}
		code, body, err := scrape(prometheus)
		if err != nil {
			return err
		}
		if code != http.StatusOK {
			return fmt.Errorf("/metrics as an allowed scraper: HTTP %d: %.200s", code, body)
		}
		for _, series := range []string{"crowsnest_operator_jobs_created_total", "controller_runtime_reconcile_total"} {
			if !bytes.Contains(body, []byte(series)) {
				return fmt.Errorf("metrics lack %s:\n%.500s", series, body)
			}
		}
		return nil
	}
	deadline, restarts := time.Now().Add(60*time.Second), 0
	for {
		err := metricsReady()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("operator not serving probes and metrics: %v\n%s", err, logs.String())
		}
		select {
		case err := <-done:
			if errors.Is(err, syscall.EADDRINUSE) && restarts < 3 {
				restarts++
				deadline = time.Now().Add(60 * time.Second)
				t.Logf("restarting on new ports: %v", err)
				cancel()
				start()
				continue
			}
			t.Fatalf("run returned before serving: %v\n%s", err, logs.String())
		case <-time.After(100 * time.Millisecond):
		}
	}

	for _, tc := range []struct {
		name, token string
		want        int // 0: any refusal
	}{
		{"no token", "", http.StatusUnauthorized},
		// controller-runtime's filter answers 500 when the TokenReview
		// rejects the token.
		{"a forged token", "not-a-token", 0},
		{"a valid token without the metrics-reader role", intruder, http.StatusForbidden},
	} {
		code, body, err := scrape(tc.token)
		if err != nil || code < 400 || (tc.want != 0 && code != tc.want) || bytes.Contains(body, []byte("crowsnest_operator")) {
			t.Errorf("%s: HTTP %d, %v, body %.100q; want a refusal (%d) without metrics", tc.name, code, err, body, tc.want)
		}
	}
	if resp, err := httpc.Get("http://" + metrics + "/metrics"); err == nil {
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusOK || bytes.Contains(body, []byte("crowsnest_operator")) {
			t.Errorf("plain HTTP scrape: HTTP %d %.100q", resp.StatusCode, body)
		}
	}
	// CROWSNEST_WATCH_NAMESPACES reached the cache: the Scanner in default
	// has a status by now, the one elsewhere is not even seen.
	scannerStatus := func(ns string) []metav1.Condition {
		var s crowsnestv1alpha1.Scanner
		if err := kube.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "s"}, &s); err != nil {
			t.Fatal(err)
		}
		return s.Status.Conditions
	}
	for deadline := time.Now().Add(10 * time.Second); len(scannerStatus("default")) == 0; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the Scanner in a watched namespace has no status\n%s", logs.String())
		}
	}
	if c := scannerStatus("elsewhere"); len(c) != 0 {
		t.Errorf("the Scanner outside --watch-namespaces was reconciled: %+v", c)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run returned %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("operator did not stop within 30s")
	}
}

func kubeClient(t *testing.T, cfg *rest.Config) client.Client {
	t.Helper()
	scheme, err := controller.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// metricsTokens returns bearer tokens of two service accounts: prometheus,
// bound to the shipped metrics-reader ClusterRole
// (config/rbac/metrics_reader_role.yaml), and intruder, bound to nothing.
func metricsTokens(t *testing.T, cfg *rest.Config) (prometheus, intruder string) {
	t.Helper()
	ctx := context.Background()
	c := kubeClient(t, cfg)
	raw, err := os.ReadFile(filepath.Join("..", "config", "rbac", "metrics_reader_role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var role rbacv1.ClusterRole
	if err := yaml.Unmarshal(raw, &role); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &role); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "prometheus-metrics-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "default", Name: "prometheus"}},
	}
	if err := c.Create(ctx, binding); err != nil {
		t.Fatal(err)
	}
	token := func(name string) string {
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
		if err := c.Create(ctx, sa); err != nil {
			t.Fatal(err)
		}
		tr := &authenticationv1.TokenRequest{}
		if err := c.SubResource("token").Create(ctx, sa, tr); err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}
	return token("prometheus"), token("intruder")
}
