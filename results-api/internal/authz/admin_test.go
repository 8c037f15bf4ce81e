package authz_test

import (
	"errors"
	"strings"
	"sync"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/authn"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/authz"
)

const sarPath = "POST /apis/authorization.k8s.io/v1/subjectaccessreviews"

// The admin scope on a real kube-apiserver, whose authorizer is RBAC
// (envtest's default --authorization-mode): SubjectAccessReviews on the
// virtual resource reports.crowsnest.dev decide, the static token always
// passes, and decisions are cached and shared by concurrent callers.
func TestAdminScopeBySubjectAccessReview(t *testing.T) {
	c := newCluster(t)
	c.clusterRole("crowsnest-report-admin", authz.VerbCreate, authz.VerbDelete)
	c.clusterRole("crowsnest-report-deleter", authz.VerbDelete)
	c.bind("crowsnest-report-admin",
		rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"},
		rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "default", Namespace: c.ns})
	c.bind("crowsnest-report-deleter", rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "carol"})

	var l link
	az, err := authz.New(c.client(&l), authz.Options{})
	must(t, err)
	user := func(name string) authz.Identity {
		return authz.Identity{Username: name, UID: name + "-uid", Groups: []string{"system:authenticated"}}
	}
	// A service account, authenticated for real (TokenReview), bound by RBAC.
	ops := c.identity(c.token("default", nil))

	for _, tc := range []struct {
		name   string
		id     authz.Identity
		verb   string
		reason string // empty: allowed
	}{
		{"bound user creates", user("alice"), authz.VerbCreate, ""},
		{"bound user deletes", user("alice"), authz.VerbDelete, ""},
		{"bound service account deletes", ops, authz.VerbDelete, ""},
		{"static admin token", authz.Identity{Static: true}, authz.VerbDelete, ""},
		{"user without a binding creates", user("bob"), authz.VerbCreate, "bob may not create reports.crowsnest.dev"},
		{"user without a binding deletes", user("bob"), authz.VerbDelete, "bob may not delete reports.crowsnest.dev"},
		{"delete-only user creates", user("carol"), authz.VerbCreate, "carol may not create"},
		{"delete-only user deletes", user("carol"), authz.VerbDelete, ""},
		{"scan pod token", c.identity(c.token(scanSA, nil)), authz.VerbCreate, "may not create"},
		{"another verb", user("alice"), "get", `admin verb "get" is not create or delete`},
		{"anonymous", authz.Identity{}, authz.VerbCreate, "anonymous"},
	} {
		err := az.AuthorizeAdmin(t.Context(), tc.id, tc.verb)
		switch {
		case tc.reason == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.reason == "":
			t.Logf("%s: allowed", tc.name)
		case !errors.Is(err, authz.ErrForbidden) || !strings.Contains(err.Error(), tc.reason):
			t.Errorf("%s: got %v, want ErrForbidden saying %q", tc.name, err, tc.reason)
		default:
			t.Logf("%s: refused: %v", tc.name, err)
		}
	}

	t.Run("concurrent identical checks share one review", func(t *testing.T) {
		before := l.count(sarPath)
		var wg sync.WaitGroup
		errs := make([]error, 32)
		for i := range errs {
			wg.Go(func() { errs[i] = az.AuthorizeAdmin(t.Context(), user("dave"), authz.VerbDelete) })
		}
		wg.Wait()
		for _, err := range errs {
			if !errors.Is(err, authz.ErrForbidden) {
				t.Fatalf("got %v, want ErrForbidden", err)
			}
		}
		must(t, az.AuthorizeAdmin(t.Context(), user("alice"), authz.VerbCreate)) // cached
		if n := l.count(sarPath) - before; n != 1 {
			t.Errorf("%d SubjectAccessReviews, want 1", n)
		}
	})
	t.Run("API server unreachable", func(t *testing.T) {
		var down link
		down.down.Store(true)
		az, err := authz.New(c.client(&down), authz.Options{})
		must(t, err)
		for range 2 { // not cached: asked again
			err := az.AuthorizeAdmin(t.Context(), user("alice"), authz.VerbCreate)
			if !errors.Is(err, authz.ErrUnavailable) {
				t.Fatalf("got %v, want ErrUnavailable", err)
			}
			t.Logf("unavailable: %v", err)
		}
		must(t, az.AuthorizeAdmin(t.Context(), authz.Identity{Static: true}, authz.VerbCreate))
		down.down.Store(false)
		must(t, az.AuthorizeAdmin(t.Context(), user("alice"), authz.VerbCreate))
		if n := down.count(sarPath); n != 3 {
			t.Errorf("%d review attempts, want 3 (2 failed, 1 after recovery)", n)
		}
	})
}

func TestRematchScope(t *testing.T) {
	az, err := authz.New(failing(t, 500), authz.Options{RematchServiceAccounts: []string{"crowsnest/matcher"}})
	must(t, err)
	if err := az.AuthorizeRematch(authz.Identity{Username: "system:serviceaccount:crowsnest:matcher"}); err != nil {
		t.Errorf("matcher refused: %v", err)
	}
	for _, id := range []authz.Identity{
		{Username: "system:serviceaccount:crowsnest:crowsnest-scan"},
		{Username: "system:serviceaccount:other:matcher"},
		{Username: "crowsnest/matcher"},
		{Static: true},
		{},
	} {
		if err := az.AuthorizeRematch(id); !errors.Is(err, authz.ErrForbidden) {
			t.Errorf("%+v: got %v, want ErrForbidden", id, err)
		}
	}
	for _, bad := range []string{"matcher", "/matcher", "ns/", "ns/*", "ns/a/b", "ns/a:b"} {
		if _, err := authz.New(failing(t, 500), authz.Options{RematchServiceAccounts: []string{bad}}); err == nil {
			t.Errorf("rematch account %q accepted", bad)
		}
	}
	if _, err := authz.New(nil, authz.Options{}); err == nil {
		t.Error("nil client accepted")
	}
}

// The scan service account can never hold the rematch scope: every scan
// Pod's token would then replace any digest's report. Both ways of
// configuring it are refused at start-up.
func TestScanServiceAccountIsNeverRematch(t *testing.T) {
	_, err := authz.New(failing(t, 500), authz.Options{RematchServiceAccounts: []string{"crowsnest/matcher", "scans/crowsnest-scan"},
		ScanServiceAccount: "crowsnest-scan"})
	if err == nil || !strings.Contains(err.Error(), "is the scan service account") {
		t.Errorf("rematch account named like the scan service account: %v", err)
	}
	// Without a scan service account, every account the upload list admits
	// may run scan Pods.
	lax, err := authz.New(failing(t, 500), authz.Options{RematchServiceAccounts: []string{"crowsnest/matcher"}})
	must(t, err)
	for allowed, ok := range map[string]bool{"crowsnest/*": false, "*/matcher": false, "crowsnest/matcher": false, "scans/*": true} {
		gate := &authz.Gate{Reviewer: uploaders(t, allowed), Authz: lax}
		if err := gate.Check(); (err == nil) != ok {
			t.Errorf("uploads allowed from %s: Check() = %v, want ok=%v", allowed, err, ok)
		}
	}
	strict, err := authz.New(failing(t, 500), authz.Options{RematchServiceAccounts: []string{"crowsnest/matcher"}, ScanServiceAccount: "crowsnest-scan"})
	must(t, err)
	if err := (&authz.Gate{Reviewer: uploaders(t, "crowsnest/*"), Authz: strict}).Check(); err != nil {
		t.Errorf("uploads only from crowsnest-scan, matcher's namespace allowed: %v", err)
	}
}

// uploaders is authn's TokenReviewer allowing uploads from allowed (it
// never calls the API server here).
func uploaders(t *testing.T, allowed string) *authn.TokenReviewer {
	t.Helper()
	r, err := authn.New(&rest.Config{Host: "https://127.0.0.1:1"}, authn.Options{Allowed: []string{allowed}})
	must(t, err)
	return r
}

func (c *cluster) clusterRole(name string, verbs ...string) {
	c.t.Helper()
	must(c.t, create(c.ctx, c.admin.RbacV1().ClusterRoles(), &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{authz.ReportsGroup}, Resources: []string{authz.ReportsResource}, Verbs: verbs}},
	}))
}

func (c *cluster) bind(role string, subjects ...rbacv1.Subject) {
	c.t.Helper()
	must(c.t, create(c.ctx, c.admin.RbacV1().ClusterRoleBindings(), &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   subjects,
	}))
}
