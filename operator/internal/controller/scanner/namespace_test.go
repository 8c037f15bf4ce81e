package scanner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
	"github.com/crowsnest-dev/crowsnest/test/support/resultsapitest"
)

// TestWatchNamespacesKeepsJobsOut: with --watch-namespaces a, a Scanner and
// an unscanned image in namespace b give no Job in b, while a's Scanner
// gets its Job. The cache does not even see b.
func TestWatchNamespacesKeepsJobsOut(t *testing.T) {
	a, b := newNamespace(t), newNamespace(t)
	api := resultsapitest.Start(t)
	runPod(t, a, "web", nil, "nginx@"+testDigest(41))
	runPod(t, b, "web", nil, "nginx@"+testDigest(42))
	newScanner(t, a)
	newScanner(t, b)
	opts := testOptions()
	opts.WatchNamespaces = []string{a}
	startOperator(t, a, api.URL, "", opts)

	eventually(t, 20*time.Second, "a's scan job", jobCount(t, a, 1))
	consistently(t, 3*time.Second, "no scan job in b", jobCount(t, b, 0))
	if s := getScanner(t, b); len(s.Status.Conditions) != 0 {
		t.Errorf("b's Scanner was reconciled: %+v", s.Status)
	}
}

// TestScannerOutsideWatchNamespacesStalls: should the cache show a Scanner
// outside --watch-namespaces (a cache wider than the option), the
// reconciler still creates nothing there and says why in the status.
func TestScannerOutsideWatchNamespacesStalls(t *testing.T) {
	a, b := newNamespace(t), newNamespace(t)
	api := resultsapitest.Start(t)
	runPod(t, b, "web", nil, "nginx@"+testDigest(43))
	newScanner(t, b)
	opts := testOptions()
	opts.WatchNamespaces = []string{a}
	startOperatorAs(t, restConfig, []string{a, b}, api.URL, "", opts)

	eventually(t, 20*time.Second, "b's Scanner Stalled=True NamespaceNotPermitted", stalledNotPermitted(t, b, "--watch-namespaces"))
	consistently(t, 2*time.Second, "no scan job in b", jobCount(t, b, 0))
}

// TestForbiddenNamespaceStalls plays a least-privilege install gone wrong:
// the operator runs as a service account whose Role in namespace a grants
// the generated rules, while in b it may read but not create Jobs. The API
// server answers 403 to the Job in b: b's Scanner must be Stalled with
// NamespaceNotPermitted, not retried in a loop, retried once per
// requested-at annotation, and scanned once the Role allows it.
func TestForbiddenNamespaceStalls(t *testing.T) {
	ctx := context.Background()
	a, b := newNamespace(t), newNamespace(t)
	api := resultsapitest.Start(t)
	sa := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: newNamespace(t), Name: "crowsnest-operator"}
	cfg := serviceAccountConfig(t, sa)
	rules := namespacedRules(t)
	bindRole(t, a, sa, rules)
	bindRole(t, b, sa, withoutJobWrites(rules))
	runPod(t, a, "web", nil, "nginx@"+testDigest(44))
	runPod(t, b, "web", nil, "nginx@"+testDigest(45))
	newScanner(t, a)
	newScanner(t, b)
	opts := testOptions()
	opts.WatchNamespaces = []string{a, b}
	verdicts := counterSum(t, "crowsnest_operator_namespace_not_permitted_total")
	startOperatorAs(t, cfg, opts.WatchNamespaces, api.URL, "", opts)

	eventually(t, 20*time.Second, "a's scan job", jobCount(t, a, 1))
	eventually(t, 20*time.Second, "b's Scanner Stalled=True NamespaceNotPermitted", stalledNotPermitted(t, b, "create jobs.batch"))
	eventually(t, 10*time.Second, "a's Scanner Scanning", conditions(t, a, scanningOK...))
	if n := len(scanJobs(t, b)); n != 0 {
		t.Fatalf("%d scan jobs in b", n)
	}

	// A hot loop (an error returned, so retried with backoff from 5 ms)
	// reconciles about ten times in three seconds; a Stalled Scanner waits
	// for a change, and nothing else changes here.
	reconciles := counterSum(t, "controller_runtime_reconcile_total")
	time.Sleep(3 * time.Second)
	if n := counterSum(t, "controller_runtime_reconcile_total") - reconciles; n > 1 {
		t.Errorf("%v reconciles in 3s while stalled, want at most 1", n)
	}
	if n := counterSum(t, "crowsnest_operator_namespace_not_permitted_total") - verdicts; n != 1 {
		t.Errorf("%v not-permitted verdicts, want 1", n)
	}

	// The annotation asks again: one more verdict, still stalled.
	requestScan(t, b, "1")
	eventually(t, 10*time.Second, "a second verdict after requested-at", func() error {
		if n := counterSum(t, "crowsnest_operator_namespace_not_permitted_total") - verdicts; n != 2 {
			return fmt.Errorf("%v verdicts, want 2", n)
		}
		return nil
	})
	if err := stalledNotPermitted(t, b, "create jobs.batch")(); err != nil {
		t.Fatal(err)
	}

	// Granted and asked again: b is scanned and no longer stalled.
	var role rbacv1.Role
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: b, Name: "crowsnest-operator"}, &role); err != nil {
		t.Fatal(err)
	}
	role.Rules = rules
	if err := k8s.Update(ctx, &role); err != nil {
		t.Fatal(err)
	}
	requestScan(t, b, "2")
	eventually(t, 20*time.Second, "b's scan job once permitted", jobCount(t, b, 1))
	eventually(t, 10*time.Second, "b's Stalled cleared", func() error {
		if err := conditions(t, b, scanningOK...)(); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(getScanner(t, b).Status.Conditions, crowsnestv1alpha1.ConditionStalled); c != nil {
			return fmt.Errorf("Stalled = %+v", c)
		}
		return nil
	})
}

// stalledNotPermitted polls for Ready=False and Stalled=True with reason
// NamespaceNotPermitted whose message names why and the chart value.
func stalledNotPermitted(t testing.TB, ns, why string) func() error {
	return func() error {
		s := getScanner(t, ns)
		ready := meta.FindStatusCondition(s.Status.Conditions, crowsnestv1alpha1.ConditionReady)
		stalled := meta.FindStatusCondition(s.Status.Conditions, crowsnestv1alpha1.ConditionStalled)
		if ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != crowsnestv1alpha1.ReasonNamespaceNotPermitted ||
			stalled == nil || stalled.Status != metav1.ConditionTrue || stalled.Reason != crowsnestv1alpha1.ReasonNamespaceNotPermitted {
			return fmt.Errorf("Ready = %+v, Stalled = %+v", ready, stalled)
		}
		if !strings.Contains(stalled.Message, why) || !strings.Contains(stalled.Message, "global.scan.namespaces") {
			return fmt.Errorf("Stalled message %q lacks %q or the chart value", stalled.Message, why)
		}
		return nil
	}
}

// requestScan sets the Scanner's requested-at annotation.
func requestScan(t testing.TB, ns, value string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s := getScanner(t, ns)
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations[crowsnestv1alpha1.AnnotationRequestedAt] = value
		return k8s.Update(context.Background(), s)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// serviceAccountConfig creates a service account and returns a client
// config that authenticates as it with a bearer token from the TokenRequest
// API, as the operator's Pod does.
func serviceAccountConfig(t testing.TB, subject rbacv1.Subject) *rest.Config {
	t.Helper()
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: subject.Namespace, Name: subject.Name}}
	if err := k8s.Create(ctx, sa); err != nil {
		t.Fatal(err)
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(3600))}}
	if err := k8s.SubResource("token").Create(ctx, sa, tr); err != nil {
		t.Fatal(err)
	}
	cfg := rest.AnonymousClientConfig(restConfig)
	cfg.BearerToken = tr.Status.Token
	cfg.QPS, cfg.Burst = restConfig.QPS, restConfig.Burst
	return cfg
}

// namespacedRules are the generated role's rules (config/rbac/role.yaml)
// that a Role in a watched namespace grants: all but the cluster-scoped
// reviews, which only a ClusterRole can grant.
func namespacedRules(t testing.TB) []rbacv1.PolicyRule {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "config", "rbac", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var role rbacv1.ClusterRole
	if err := yaml.Unmarshal(raw, &role); err != nil {
		t.Fatal(err)
	}
	var rules []rbacv1.PolicyRule
	for _, r := range role.Rules {
		if !slices.Contains(r.APIGroups, "authentication.k8s.io") && !slices.Contains(r.APIGroups, "authorization.k8s.io") {
			rules = append(rules, r)
		}
	}
	if len(rules) == 0 || len(rules) == len(role.Rules) {
		t.Fatalf("role.yaml: %d of %d rules are namespaced", len(rules), len(role.Rules))
	}
	return rules
}

// withoutJobWrites keeps only reads of Jobs.
func withoutJobWrites(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	out := make([]rbacv1.PolicyRule, 0, len(rules))
	for _, r := range rules {
		r = *r.DeepCopy()
		if slices.Contains(r.Resources, "jobs") {
			r.Verbs = []string{"get", "list", "watch"}
		}
		out = append(out, r)
	}
	return out
}

// bindRole grants rules in ns to subject through a Role and RoleBinding, as
// the chart does per watched namespace.
func bindRole(t testing.TB, ns string, subject rbacv1.Subject, rules []rbacv1.PolicyRule) {
	t.Helper()
	ctx := context.Background()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "crowsnest-operator"}, Rules: rules}
	if err := k8s.Create(ctx, role); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "crowsnest-operator"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{subject},
	}
	if err := k8s.Create(ctx, binding); err != nil {
		t.Fatal(err)
	}
}
