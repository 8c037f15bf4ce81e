package charttest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/crowsnest-dev/crowsnest/test/support/kubetest"
)

// subject is who a SubjectAccessReview asks about.
type subject struct {
	user   string
	groups []string
}

func person(name string) subject {
	return subject{user: name, groups: []string{"system:authenticated"}}
}

// serviceAccount is a ServiceAccount as TokenReview reports it.
func serviceAccount(ns, name string) subject {
	return subject{user: "system:serviceaccount:" + ns + ":" + name,
		groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}}
}

// access is one question to the API server's authorizer: may who verb
// group/resource (a subresource after "/", e.g. scanners/status) in
// namespace ("" = cluster-wide)? A resource starting with "/" is a
// non-resource URL.
type access struct {
	who                              subject
	namespace, verb, group, resource string
	want                             bool
}

func (a access) String() string {
	where := "cluster-wide"
	if a.namespace != "" {
		where = "in " + a.namespace
	}
	resource := a.resource
	if a.group != "" {
		resource += "." + a.group
	}
	return fmt.Sprintf("%s %s %s %s", a.who.user, a.verb, resource, where)
}

func can(ctx context.Context, cs kubernetes.Interface, a access) (bool, error) {
	spec := authzv1.SubjectAccessReviewSpec{User: a.who.user, Groups: a.who.groups}
	if strings.HasPrefix(a.resource, "/") {
		spec.NonResourceAttributes = &authzv1.NonResourceAttributes{Path: a.resource, Verb: a.verb}
	} else {
		resource, sub, _ := strings.Cut(a.resource, "/")
		spec.ResourceAttributes = &authzv1.ResourceAttributes{Namespace: a.namespace, Verb: a.verb, Group: a.group, Resource: resource, Subresource: sub}
	}
	res, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authzv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("subjectaccessreview %s: %w", a, err)
	}
	return res.Status.Allowed, nil
}

// checkAccess waits until every granted access is allowed (RBAC reaches the
// authorizer through an informer, aggregation through a controller), then
// checks that every other one is denied: RBAC only adds, so once the grants
// are seen the denials are final.
func checkAccess(ctx context.Context, t *testing.T, cs kubernetes.Interface, checks []access) {
	t.Helper()
	pending := map[int]error{} // index in checks -> last error, if any
	for i, a := range checks {
		if a.want {
			pending[i] = nil
		}
	}
	_ = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		for i := range pending {
			ok, err := can(ctx, cs, checks[i])
			if ok {
				delete(pending, i)
			} else {
				pending[i] = err
			}
		}
		return len(pending) == 0, nil
	})
	for i, a := range checks {
		if err, denied := pending[i]; denied {
			t.Errorf("%s: denied, want allowed (%v)", a, err)
		}
	}
	for _, a := range checks {
		if a.want {
			continue
		}
		if ok, err := can(ctx, cs, a); err != nil {
			t.Error(err)
		} else if ok {
			t.Errorf("%s: allowed, want denied", a)
		}
	}
}

// applyRBAC renders release in ns with args and applies its ServiceAccounts,
// roles and bindings to the API server for real.
func applyRBAC(ctx context.Context, t *testing.T, release, ns string, args ...string) {
	t.Helper()
	applyKinds(ctx, t, release, ns, []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}, args...)
}

// createNamespaces creates each namespace for real.
func createNamespaces(ctx context.Context, t *testing.T, cs kubernetes.Interface, names ...string) {
	t.Helper()
	for _, name := range names {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRBACOnAPIServer applies the RBAC of a tokenreview-mode release to the
// real kube-apiserver, binds people the way NOTES.txt says, and asks the
// server's own authorizer (SubjectAccessReview, as results-api does) who may
// do what. The operator, limited to the scan namespace, can run scan Jobs
// there and nowhere else, and Prometheus's ServiceAccount (bound by the
// chart) may scrape /metrics. With kube-controller-manager's ClusterRole
// aggregation running, the built-in view, edit and admin roles read reports
// too.
func TestRBACOnAPIServer(t *testing.T) {
	const release, ns, apps, other = "trust", "trust-system", "trust-apps", "trust-other"
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cs, err := kubernetes.NewForConfig(apiCfg)
	if err != nil {
		t.Fatal(err)
	}
	createNamespaces(ctx, t, cs, ns, apps, other, "ci")
	applyRBAC(ctx, t, release, ns, "--set", "global.scan.namespaces={"+apps+"}",
		"--set", "monitoring.prometheusServiceAccount.namespace=monitoring", "--set", "monitoring.prometheusServiceAccount.name=prometheus")
	bind(ctx, t, cs, apps, "alice-view", release+"-view", rbacv1.Subject{Kind: rbacv1.UserKind, Name: "alice"})
	bind(ctx, t, cs, "", "bob-admin", release+"-admin", rbacv1.Subject{Kind: rbacv1.UserKind, Name: "bob"})
	bind(ctx, t, cs, "", "ci-admin", release+"-admin", rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "uploader", Namespace: "ci"})

	const reports, crowsnest = "reports", "crowsnest.dev"
	alice, bob, ci := person("alice"), person("bob"), serviceAccount("ci", "uploader")
	api, scan := serviceAccount(ns, release+"-results-api"), serviceAccount(apps, "crowsnest-scan")
	operator, prometheus := serviceAccount(ns, release+"-operator"), serviceAccount("monitoring", "prometheus")
	checkAccess(ctx, t, cs, []access{
		// A viewer bound in one namespace reads that namespace's reports only.
		{alice, apps, "list", crowsnest, reports, true},
		{alice, apps, "get", crowsnest, reports, true},
		{alice, apps, "delete", crowsnest, reports, false},
		{alice, apps, "create", crowsnest, reports, false},
		{alice, other, "list", crowsnest, reports, false},
		{alice, "", "list", crowsnest, reports, false},
		{alice, "", "create", crowsnest, reports, false}, // results-api's admin check
		// Admins hold the admin scope cluster-wide, people and CI alike.
		{bob, "", "create", crowsnest, reports, true},
		{bob, "", "delete", crowsnest, reports, true},
		{bob, "", "list", crowsnest, reports, true},
		{ci, "", "create", crowsnest, reports, true},
		{ci, "", "delete", crowsnest, reports, true},
		// results-api: reviews, RoleBindings, and one scan Pod and Job by name; nothing more.
		{api, "", "create", "authentication.k8s.io", "tokenreviews", true},
		{api, "", "create", "authorization.k8s.io", "subjectaccessreviews", true},
		{api, apps, "get", "", "pods", true},
		{api, apps, "get", "batch", "jobs", true},
		{api, apps, "list", "", "pods", false},
		{api, apps, "watch", "", "pods", false},
		{api, apps, "delete", "", "pods", false},
		{api, apps, "list", "batch", "jobs", false},
		{api, apps, "list", "", "secrets", false},
		{api, "", "list", "", "secrets", false},
		{api, apps, "get", "", "secrets", false},
		{api, apps, "get", "", "configmaps", false},
		{api, "", "create", crowsnest, reports, false}, // results-api is no admin itself
		// ... and watches RoleBindings (which namespaces to review a reader in), never changes them.
		{api, "", "watch", "rbac.authorization.k8s.io", "rolebindings", true},
		{api, apps, "list", "rbac.authorization.k8s.io", "rolebindings", true},
		{api, apps, "create", "rbac.authorization.k8s.io", "rolebindings", false},
		{api, "", "list", "rbac.authorization.k8s.io", "clusterrolebindings", false},
		{api, "", "list", "rbac.authorization.k8s.io", "clusterroles", false},
		// The scan Pods' ServiceAccount holds nothing at all.
		{scan, apps, "get", "", "pods", false},
		{scan, apps, "list", crowsnest, reports, false},
		{scan, "", "create", crowsnest, reports, false},
		{scan, "", "create", "authorization.k8s.io", "subjectaccessreviews", false},
		{scan, "", "create", "authentication.k8s.io", "tokenreviews", false},
		// The operator: scan Jobs, Pods, Scanners and Events in the scan
		// namespace only; the review APIs cluster-wide (for /metrics).
		{operator, apps, "create", "batch", "jobs", true},
		{operator, apps, "delete", "batch", "jobs", true},
		{operator, apps, "list", "", "pods", true},
		{operator, apps, "watch", crowsnest, "scanners", true},
		{operator, apps, "patch", crowsnest, "scanners/status", true},
		{operator, apps, "update", crowsnest, "scanners/finalizers", true},
		{operator, apps, "create", "events.k8s.io", "events", true},
		{operator, "", "create", "authentication.k8s.io", "tokenreviews", true},
		{operator, "", "create", "authorization.k8s.io", "subjectaccessreviews", true},
		{operator, ns, "update", "coordination.k8s.io", "leases", true}, // leader election, in its own namespace
		{operator, ns, "create", "", "events", true},                    // leader election's core/v1 event on its Lease
		{operator, other, "create", "", "events", false},
		{operator, other, "create", "batch", "jobs", false},
		{operator, "kube-system", "create", "batch", "jobs", false},
		{operator, ns, "create", "batch", "jobs", false},
		{operator, "", "create", "batch", "jobs", false},
		{operator, "", "list", "", "pods", false},
		{operator, "", "list", crowsnest, "scanners", false},
		{operator, other, "list", "", "pods", false},
		{operator, other, "watch", crowsnest, "scanners", false},
		{operator, other, "create", "events.k8s.io", "events", false},
		{operator, apps, "update", crowsnest, "scanners", false},
		{operator, apps, "get", "", "secrets", false},
		{operator, apps, "create", "", "pods", false},
		{operator, apps, "update", "coordination.k8s.io", "leases", false},
		{operator, "", "get", "", "/metrics", false},
		// Prometheus, bound by the chart, scrapes /metrics, and nothing else.
		{prometheus, "", "get", "", "/metrics", true},
		{prometheus, "", "get", "", "/healthz/etcd", false},
		{prometheus, apps, "list", "", "pods", false},
		{api, "", "get", "", "/metrics", false},
		{scan, "", "get", "", "/metrics", false},
	})

	// Whoever holds the built-in view, edit or admin role in a namespace
	// reads its reports, through <release>-view's aggregation label.
	startAggregationController(t)
	for user, role := range map[string]string{"dave": "view", "erin": "edit", "frank": "admin"} {
		bind(ctx, t, cs, apps, user+"-"+role, role, rbacv1.Subject{Kind: rbacv1.UserKind, Name: user})
	}
	dave, erin, frank := person("dave"), person("erin"), person("frank")
	checkAccess(ctx, t, cs, []access{
		{dave, apps, "list", crowsnest, reports, true},
		{dave, apps, "get", crowsnest, reports, true},
		{erin, apps, "list", crowsnest, reports, true},
		{frank, apps, "list", crowsnest, reports, true},
		{dave, other, "list", crowsnest, reports, false},
		{dave, apps, "delete", crowsnest, reports, false},
		{erin, apps, "delete", crowsnest, reports, false},
		{frank, apps, "delete", crowsnest, reports, false},
		{frank, "", "create", crowsnest, reports, false},
	})
}

// TestClusterWideOperatorOnAPIServer: operator.clusterWide=true is what it
// says: the operator may create Jobs in any namespace, kube-system included.
func TestClusterWideOperatorOnAPIServer(t *testing.T) {
	const release, ns = "wide", "wide-system"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, err := kubernetes.NewForConfig(apiCfg)
	if err != nil {
		t.Fatal(err)
	}
	createNamespaces(ctx, t, cs, ns)
	applyRBAC(ctx, t, release, ns, "--set", "operator.clusterWide=true")
	operator := serviceAccount(ns, release+"-operator")
	checkAccess(ctx, t, cs, []access{
		{operator, "kube-system", "create", "batch", "jobs", true},
		{operator, "", "list", "", "pods", true},
		{operator, "", "watch", "crowsnest.dev", "scanners", true},
		{operator, "", "create", "authentication.k8s.io", "tokenreviews", true},
		{operator, "kube-system", "get", "", "secrets", false},
		{operator, "kube-system", "create", "", "pods", false},
	})
}

// bind binds a ClusterRole to subject: in namespace with a RoleBinding, or
// cluster-wide ("") with a ClusterRoleBinding (kubectl create
// rolebinding/clusterrolebinding --clusterrole=...).
func bind(ctx context.Context, t *testing.T, cs kubernetes.Interface, namespace, name, clusterRole string, s rbacv1.Subject) {
	t.Helper()
	meta := metav1.ObjectMeta{Name: name, Namespace: namespace}
	ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole}
	if s.Kind != rbacv1.ServiceAccountKind {
		s.APIGroup = rbacv1.GroupName
	}
	var err error
	if namespace == "" {
		_, err = cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: meta, RoleRef: ref, Subjects: []rbacv1.Subject{s}}, metav1.CreateOptions{})
	} else {
		_, err = cs.RbacV1().RoleBindings(namespace).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: meta, RoleRef: ref, Subjects: []rbacv1.Subject{s}}, metav1.CreateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
}

// startAggregationController runs kube-controller-manager with only the
// ClusterRole aggregation controller (what folds labelled roles into view,
// edit and admin in a real cluster) until the test ends.
func startAggregationController(t *testing.T) {
	t.Helper()
	dir, err := kubetest.AssetsDir()
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(t.TempDir(), "kube-controller-manager.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(dir, "kube-controller-manager"),
		"--kubeconfig="+writeKubeconfig(t), "--controllers=clusterrole-aggregation-controller",
		"--leader-elect=false", "--secure-port=0")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("start kube-controller-manager from %s: %v", dir, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		var exit error // "signal: terminated" is the normal end
		select {
		case exit = <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			exit = <-done
		}
		_ = logFile.Close()
		if t.Failed() {
			out, _ := os.ReadFile(logPath)
			t.Logf("kube-controller-manager (%v) log:\n%s", exit, out)
		}
	})
}
