package authn_test

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"

	"github.com/crowsnest-dev/crowsnest/test/support/kubetest"
	"github.com/crowsnest-dev/crowsnest/test/support/pgtest"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/apitest"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/authn"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/bomtest"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/service"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// Projected service-account tokens from a real kube-apiserver (TokenRequest)
// are checked with TokenReview: the allowed account with the right audience
// writes; another audience, another account or garbage is 403; an
// unreachable API server is 503 so that the uploader retries.
func TestTokenReviewOnRealAPIServer(t *testing.T) {
	cfg := kubetest.StartT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	core, err := corev1client.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	token := func(sa, audience string) string {
		t.Helper()
		tr, err := core.ServiceAccounts("default").CreateToken(ctx, sa, &authv1.TokenRequest{
			Spec: authv1.TokenRequestSpec{Audiences: []string{audience}, ExpirationSeconds: ptr(int64(600))}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("token request for %s: %v", sa, err)
		}
		return tr.Status.Token
	}
	for _, sa := range []string{"crowsnest-scan", "other"} {
		if _, err := core.ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}},
			metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	reviewer, err := authn.New(cfg, authn.Options{Allowed: []string{"default/crowsnest-scan"}})
	if err != nil {
		t.Fatal(err)
	}
	srv := apitest.Start(t, func(c *service.Config) { c.Auth = reviewer })

	cases := []struct {
		name, token string
		want        int
	}{
		{"allowed account, right audience", token("crowsnest-scan", authn.DefaultAudience), http.StatusCreated},
		{"allowed account, wrong audience", token("crowsnest-scan", "https://kubernetes.default.svc"), http.StatusForbidden},
		{"other account, right audience", token("other", authn.DefaultAudience), http.StatusForbidden},
		{"not a token", "garbage", http.StatusForbidden},
		{"no token", "", http.StatusUnauthorized},
	}
	for i, tc := range cases {
		if got := put(t, srv.URL, i, tc.token); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
	// The verdict is cached: the allowed token works again (a new digest).
	if got := put(t, srv.URL, 10, cases[0].token); got != http.StatusCreated {
		t.Errorf("cached allowed token: %d", got)
	}

	down := rest.CopyConfig(cfg)
	down.Host = "https://127.0.0.1:1"
	unreachable, err := authn.New(down, authn.Options{Allowed: []string{"default/crowsnest-scan"}, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	srv2 := apitest.Start(t, func(c *service.Config) { c.Auth = unreachable })
	if got := put(t, srv2.URL, 11, cases[0].token); got != http.StatusServiceUnavailable {
		t.Errorf("API server unreachable: %d, want 503", got)
	}
}

func TestOptionsValidated(t *testing.T) {
	for _, bad := range []string{"no-slash", "*/*", "/name", "ns/"} {
		if _, err := authn.New(&rest.Config{Host: "https://127.0.0.1:1"}, authn.Options{Allowed: []string{bad}}); err == nil {
			t.Errorf("allowed entry %q accepted", bad)
		}
	}
}

// TestAllowedAnyNamespace: "*/name" (the chart's setting with a
// ClusterScanner, whose namespaces are chosen by labels) allows that service
// account in every namespace, and no other service account, user or group.
func TestAllowedAnyNamespace(t *testing.T) {
	r, err := authn.New(&rest.Config{Host: "https://127.0.0.1:1"}, authn.Options{Allowed: []string{"*/crowsnest-scan", "ci/uploader"}})
	if err != nil {
		t.Fatal(err)
	}
	for user, want := range map[string]bool{
		"system:serviceaccount:team-a:crowsnest-scan":       true,
		"system:serviceaccount:anything-new:crowsnest-scan": true,
		"system:serviceaccount:ci:uploader":                 true,
		"system:serviceaccount:team-a:default":              false,
		"system:serviceaccount:team-a:uploader":             false,
		"system:serviceaccount:*:crowsnest-scan-2":          false,
		"crowsnest-scan":             false,
		"system:node:crowsnest-scan": false,
	} {
		if got := r.Allowed(user); got != want {
			t.Errorf("Allowed(%q) = %v, want %v", user, got, want)
		}
	}
}

func put(t *testing.T, base string, n int, token string) int {
	t.Helper()
	d := bomtest.Digest(n + 1)
	req, _ := http.NewRequest(http.MethodPut, base+"/api/v1/reports/"+d, bytes.NewReader(bomtest.BOM(bomtest.Random(uint64(n), 3)...)))
	req.Header.Set("Content-Type", "application/vnd.cyclonedx+json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func ptr[T any](v T) *T { return &v }
