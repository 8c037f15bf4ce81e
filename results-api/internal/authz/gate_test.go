package authz_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/crowsnest-dev/crowsnest/api/scan"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/authn"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/authz"
)

// TestGateRoutesEachTokenToItsScope sends real tokens through the Gate the
// binary wires (real TokenReview, real Pods, Jobs and RBAC): a scan Pod
// uploads its digest only, the matcher replaces only existing reports, a
// person needs RBAC on reports.crowsnest.dev, and the static admin token
// works beside TokenReview.
func TestGateRoutesEachTokenToItsScope(t *testing.T) {
	c := newCluster(t)
	reviewer, err := authn.New(c.cfg, authn.Options{Audience: scan.TokenAudience, Allowed: []string{c.ns + "/*"}})
	must(t, err)
	az, err := authz.New(kubernetes.NewForConfigOrDie(c.cfg), authz.Options{
		RematchServiceAccounts: []string{c.ns + "/matcher"}, ScanServiceAccount: scanSA})
	must(t, err)
	static, err := authn.NewStaticToken("admin-secret")
	must(t, err)
	stored := map[string]bool{digest('a'): true}
	gate := &authz.Gate{Static: &static, Reviewer: reviewer, Authz: az, Audience: scan.TokenAudience,
		HasReport: func(_ context.Context, d string) (bool, error) { return stored[d], nil }}

	job := c.scanJob("scan-a", digest('a'))
	pod := c.pod("scan-a-x1", scanSA, job, "Running")
	scanToken := c.token(scanSA, pod)
	must(t, create(c.ctx, c.admin.CoreV1().ServiceAccounts(c.ns), saObject("matcher")))
	matcher := c.token("matcher", nil)
	// A kubelet binds every token it mounts to its Pod, the matcher's too.
	matcherBound := c.token("matcher", c.pod("matcher-0", "matcher", nil, "Running"))
	c.clusterRole("reports-admin", "create", "delete")
	c.bind("reports-admin", rbacv1.Subject{Kind: "ServiceAccount", Name: "default", Namespace: c.ns})
	person := c.token("default", nil) // stands in for a person bound to crowsnest-admin
	must(t, create(c.ctx, c.admin.CoreV1().ServiceAccounts(c.ns), saObject("nobody")))
	nobody := c.token("nobody", nil) // authenticated, but no RBAC on reports

	for _, tc := range []struct {
		name, method, token, digest string
		updateOnly                  bool
		want                        error // nil, authn.ErrBadToken or authn.ErrNoWriteKey
		scope                       authz.Scope
	}{
		{"scan pod uploads its digest", http.MethodPut, scanToken, digest('a'), false, nil, authz.Upload},
		{"scan pod uploads another digest", http.MethodPut, scanToken, digest('b'), false, authn.ErrBadToken, ""},
		{"scan pod deletes", http.MethodDelete, scanToken, digest('a'), false, authn.ErrBadToken, ""},
		{"matcher replaces an existing report", http.MethodPut, matcher, digest('a'), false, nil, authz.Rematch},
		{"matcher creates a new report", http.MethodPut, matcher, digest('b'), false, authn.ErrBadToken, ""},
		{"matcher's Pod-bound token replaces an existing report", http.MethodPut, matcherBound, digest('a'), false, nil, authz.Rematch},
		{"matcher's Pod-bound token creates a new report", http.MethodPut, matcherBound, digest('b'), false, authn.ErrBadToken, ""},
		// An update-only write (the vulndb record) needs no look-up: the
		// store answers 404 for a digest without a report.
		{"matcher updates a report's DB record", http.MethodPut, matcher, digest('b'), true, nil, authz.Rematch},
		{"matcher deletes", http.MethodDelete, matcher, digest('a'), false, authn.ErrBadToken, ""},
		{"admin by RBAC creates", http.MethodPut, person, digest('b'), false, nil, authz.Admin},
		{"admin by RBAC deletes", http.MethodDelete, person, digest('a'), false, nil, authz.Admin},
		{"person without RBAC creates", http.MethodPut, nobody, digest('b'), false, authn.ErrBadToken, ""},
		{"person without RBAC deletes", http.MethodDelete, nobody, digest('a'), false, authn.ErrBadToken, ""},
		{"static admin token", http.MethodPut, "admin-secret", digest('c'), false, nil, authz.Admin},
		{"static admin token deletes", http.MethodDelete, "admin-secret", digest('c'), false, nil, authz.Admin},
		{"garbage token (no TokenReview)", http.MethodPut, "not-a-jwt", digest('a'), false, authn.ErrBadToken, ""},
	} {
		ctx := authz.WithDigest(c.ctx, tc.digest)
		if tc.updateOnly {
			ctx = authz.WithUpdateOnly(ctx)
		}
		r := httptest.NewRequestWithContext(ctx, tc.method, "/api/v1/reports/"+tc.digest, nil)
		scope, err := gate.AuthenticateScope(r, tc.token)
		if (tc.want == nil && err != nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
		if scope != tc.scope {
			t.Errorf("%s: scope %q, want %q", tc.name, scope, tc.scope)
		}
		if err2 := gate.Authenticate(r, tc.token); (err2 == nil) != (err == nil) {
			t.Errorf("%s: Authenticate %v, AuthenticateScope %v", tc.name, err2, err)
		}
	}

	r := httptest.NewRequestWithContext(authz.WithDigest(c.ctx, digest('z')), http.MethodPut, "/", nil)
	// Static-only gate (no Reviewer): anything but the admin token is refused.
	staticOnly := &authz.Gate{Static: &static}
	if err := staticOnly.Authenticate(r, scanToken); !errors.Is(err, authn.ErrBadToken) {
		t.Errorf("static-only gate, scan token: %v", err)
	}
	if err := (&authz.Gate{}).Authenticate(r, "x"); !errors.Is(err, authn.ErrNoWriteKey) {
		t.Errorf("gate with nothing configured: %v", err)
	}
}

func saObject(name string) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}
}
