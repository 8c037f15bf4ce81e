package charttest

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestScanServiceAccount: scan Pods never run as a namespace's default
// ServiceAccount. The operator and results-api get the same name, results-api
// accepts uploads only from it in the scan namespaces, and the chart creates
// it there, permissionless and without an API token.
func TestScanServiceAccount(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tests := []struct {
		name       string
		args       []string
		sa         string
		namespaces []string
		allowed    string // --allowed-service-accounts; empty: static mode
	}{
		{name: "no scan namespaces, cluster-wide", args: []string{"--set", "operator.clusterWide=true"}, sa: "crowsnest-scan"},
		{name: "scan namespaces", args: []string{"--set", "global.scan.namespaces={team-a,team-b}"},
			sa: "crowsnest-scan", namespaces: []string{"team-a", "team-b"}, allowed: "team-a/crowsnest-scan,team-b/crowsnest-scan"},
		// Namespaces chosen by labels: the scan ServiceAccount of any
		// namespace; the operator, not the chart, creates it.
		{name: "ClusterScanner", args: append(slices.Clone(clusterScannerArgs), "--set", "global.scan.namespaces={team-a}"),
			sa: "crowsnest-scan", namespaces: []string{"team-a"}, allowed: "*/crowsnest-scan"},
		{name: "own name and an extra namespace", args: []string{"--set", "global.scan.namespaces={team-a}", "--set", "global.scan.serviceAccount=scan-bot",
			"--set", "resultsApi.auth.extraAllowedServiceAccounts={team-c/scan-bot}"},
			sa: "scan-bot", namespaces: []string{"team-a"}, allowed: "team-a/scan-bot,team-c/scan-bot"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := Template(ctx, repoRoot, releaseNS, tt.args...)
			if err != nil {
				t.Fatal(err)
			}
			operator := container(t, objs, "Deployment/crowsnest-operator")
			if !slices.Contains(operator.Args, "--scan-service-account="+tt.sa) {
				t.Errorf("operator args %q lack --scan-service-account=%s", operator.Args, tt.sa)
			}
			api := container(t, objs, "Deployment/crowsnest-results-api")
			if got := envValue(api, "CROWSNEST_SCAN_SERVICE_ACCOUNT"); got != tt.sa {
				t.Errorf("results-api CROWSNEST_SCAN_SERVICE_ACCOUNT = %q, want %q", got, tt.sa)
			}
			mode, allowed := "static", ""
			if tt.allowed != "" {
				mode, allowed = "tokenreview", "--allowed-service-accounts="+tt.allowed
			}
			wantArgs := []string{"--auth-mode=" + mode, "--admin-token-file=/var/run/secrets/crowsnest/admin-token/token"}
			if allowed != "" {
				wantArgs = append(wantArgs, allowed, "--token-audience=crowsnest-results-api")
			}
			for _, a := range wantArgs {
				if !slices.Contains(api.Args, a) {
					t.Errorf("results-api args %q lack %s", api.Args, a)
				}
			}
			// The rematch scope: the matcher's ServiceAccount only, and
			// only in tokenreview mode (static mode accepts no Kubernetes
			// token at all).
			for _, a := range api.Args {
				if (allowed == "" && strings.HasPrefix(a, "--rematch-service-accounts")) || (allowed == "" && strings.HasPrefix(a, "--allowed-service-accounts")) {
					t.Errorf("results-api has %s", a)
				}
			}
			if want := "--rematch-service-accounts=" + releaseNS + "/crowsnest-matcher"; allowed != "" && !slices.Contains(api.Args, want) {
				t.Errorf("results-api args %q lack %s", api.Args, want)
			}
			if envValue(api, "CROWSNEST_REMATCH_SERVICE_ACCOUNTS") != "" {
				t.Error("results-api has CROWSNEST_REMATCH_SERVICE_ACCOUNTS")
			}

			var created []string
			for _, o := range objs {
				if o.GetKind() != "ServiceAccount" || o.GetNamespace() == releaseNS {
					continue
				}
				var sa corev1.ServiceAccount
				if err := fromUnstructured(o, &sa); err != nil {
					t.Fatal(err)
				}
				if sa.Name != tt.sa || sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken {
					t.Errorf("ServiceAccount %s/%s (automount %v), want %s without an API token", sa.Namespace, sa.Name, sa.AutomountServiceAccountToken, tt.sa)
				}
				created = append(created, sa.Namespace)
			}
			if !slices.Equal(created, tt.namespaces) {
				t.Errorf("scan ServiceAccount created in %q, want %q", created, tt.namespaces)
			}
		})
	}
}

// TestRBACPerMode pins results-api's ClusterRole to exactly ResultsAPIRules,
// bound to its own ServiceAccount only, in tokenreview mode; to TokenReview
// and SubjectAccessReview alone with static writes and Kubernetes reads; and
// to nothing with static writes and open reads, where its Pod mounts no API
// token either.
func TestRBACPerMode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	open := []string{"--set", "resultsApi.readAuth.mode=open"}
	for _, tt := range []struct {
		args  []string
		kube  bool // results-api talks to the API server (tokenreview writes or Kubernetes reads)
		rules []rbacv1.PolicyRule
	}{
		{append([]string{"--set", "operator.clusterWide=true"}, open...), false, nil},
		{[]string{"--set", "operator.clusterWide=true"}, true, ResultsAPIReadRules},
		{[]string{"--set", "global.scan.namespaces={team-a}"}, true, ResultsAPIRules},
		{append([]string{"--set", "global.scan.namespaces={team-a}", "--set", "resultsApi.auth.mode=static"}, open...), false, nil},
		{[]string{"--set", "global.scan.namespaces={team-a}", "--set", "resultsApi.auth.mode=static"}, true, ResultsAPIReadRules},
		// Every namespace reviewed (an authorizer other than RBAC): no RoleBinding watch.
		{[]string{"--set", "global.scan.namespaces={team-a}", "--set", "resultsApi.readAuth.namespaces=all"}, true,
			slices.Delete(slices.Clone(ResultsAPIRules), 3, 4)},
	} {
		objs, err := Template(ctx, repoRoot, releaseNS, tt.args...)
		if err != nil {
			t.Fatal(err)
		}
		pod := podTemplate(t, objs, "Deployment/crowsnest-results-api")
		if automount := pod.Spec.AutomountServiceAccountToken; automount == nil || *automount != tt.kube {
			t.Errorf("%v: results-api automountServiceAccountToken = %v, want %v", tt.args, automount, tt.kube)
		}
		role, binding := find(objs, "ClusterRole/crowsnest-results-api"), find(objs, "ClusterRoleBinding/crowsnest-results-api")
		if !tt.kube {
			if role != nil || binding != nil {
				t.Errorf("%v: static mode renders results-api RBAC", tt.args)
			}
			continue
		}
		if role == nil || binding == nil {
			t.Fatalf("%v: results-api ClusterRole or binding not rendered", tt.args)
		}
		var r rbacv1.ClusterRole
		if err := fromUnstructured(role, &r); err != nil {
			t.Fatal(err)
		}
		if !slices.EqualFunc(r.Rules, tt.rules, ruleEqual) {
			t.Errorf("%v: results-api rules = %+v, want exactly %+v", tt.args, r.Rules, tt.rules)
		}
		var b rbacv1.ClusterRoleBinding
		if err := fromUnstructured(binding, &b); err != nil {
			t.Fatal(err)
		}
		want := []rbacv1.Subject{{Kind: "ServiceAccount", Name: "crowsnest-results-api", Namespace: releaseNS}}
		if b.RoleRef.Name != r.Name || !slices.Equal(b.Subjects, want) {
			t.Errorf("binding %+v %+v, want %s to %+v", b.RoleRef, b.Subjects, r.Name, want)
		}
	}
}

// TestOperatorScope: with scan namespaces the operator watches only those
// (--watch-namespaces, each once) and holds a Role in each, bound to its own
// ServiceAccount; cluster-wide (an explicit choice) it gets neither the flag
// nor a Role. Without either the chart refuses to render (TestRejectedValues).
func TestOperatorScope(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, tt := range []struct {
		name  string
		args  []string
		watch []string // --watch-namespaces; nil: cluster-wide
	}{
		{"scan namespaces", []string{"--set", "global.scan.namespaces={team-a,team-b}"}, []string{"team-a", "team-b"}},
		// The schema refuses duplicates; the templates drop them as well.
		{"a duplicate, without the schema", []string{"--skip-schema-validation", "--set", "global.scan.namespaces={team-a,team-b,team-a}"}, []string{"team-a", "team-b"}},
		{"cluster-wide with scan namespaces", []string{"--set", "global.scan.namespaces={team-a}", "--set", "operator.clusterWide=true"}, nil},
		{"cluster-wide", []string{"--set", "operator.clusterWide=true"}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := Template(ctx, repoRoot, releaseNS, tt.args...)
			if err != nil {
				t.Fatal(err)
			}
			var flags []string
			for _, a := range container(t, objs, "Deployment/crowsnest-operator").Args {
				if strings.HasPrefix(a, "--watch-namespaces") {
					flags = append(flags, a)
				}
			}
			var wantFlags []string
			if tt.watch != nil {
				wantFlags = []string{"--watch-namespaces=" + strings.Join(tt.watch, ",")}
			}
			if !slices.Equal(flags, wantFlags) {
				t.Errorf("operator flags %q, want %q", flags, wantFlags)
			}
			var roles, bindings []string
			for _, o := range objs {
				if o.GetName() != "crowsnest-operator" {
					continue
				}
				switch o.GetKind() {
				case "Role":
					roles = append(roles, o.GetNamespace())
				case "RoleBinding":
					var b rbacv1.RoleBinding
					if err := fromUnstructured(o, &b); err != nil {
						t.Fatal(err)
					}
					want := []rbacv1.Subject{{Kind: "ServiceAccount", Name: "crowsnest-operator", Namespace: releaseNS}}
					if b.RoleRef.Kind != "Role" || b.RoleRef.Name != "crowsnest-operator" || !slices.Equal(b.Subjects, want) {
						t.Errorf("RoleBinding %s/%s binds %+v to %+v, want Role crowsnest-operator to %+v", b.Namespace, b.Name, b.RoleRef, b.Subjects, want)
					}
					bindings = append(bindings, o.GetNamespace())
				}
			}
			if !slices.Equal(roles, tt.watch) || !slices.Equal(bindings, tt.watch) {
				t.Errorf("operator Roles in %q and RoleBindings in %q, want both in %q", roles, bindings, tt.watch)
			}
			if find(objs, "ClusterRole/crowsnest-operator") == nil || find(objs, "ClusterRoleBinding/crowsnest-operator") == nil {
				t.Error("the operator's ClusterRole or its binding is missing")
			}
		})
	}
}

// TestUserRoles: the admin and view ClusterRoles exist in every mode, hold
// exactly their rules, only view is aggregated (into the built-in view), and
// two releases share no cluster-scoped name.
func TestUserRoles(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	owner := map[string]string{} // cluster-scoped Kind/name -> release
	for _, release := range []string{"alpha", "beta"} {
		objs, err := TemplateRelease(ctx, repoRoot, release, release+"-system", "--set", "global.scan.namespaces={"+release+"-apps}")
		if err != nil {
			t.Fatal(err)
		}
		policy := rbacPolicy(t, release, false)
		for _, id := range []string{"ClusterRole/" + release + "-admin", "ClusterRole/" + release + "-view"} {
			if find(objs, id) == nil {
				t.Errorf("%s not rendered", id)
			}
		}
		problems, err := CheckRBAC(objs, policy)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems {
			t.Error(p)
		}
		for _, o := range objs {
			if o.GetNamespace() != "" || o.GetKind() == "CustomResourceDefinition" {
				continue // the CRD is shared by design (Helm's crds/)
			}
			id := o.GetKind() + "/" + o.GetName()
			if other, ok := owner[id]; ok {
				t.Errorf("%s is rendered by releases %s and %s", id, other, release)
			}
			owner[id] = release
		}
	}
}

func ruleEqual(a, b rbacv1.PolicyRule) bool {
	return slices.Equal(a.APIGroups, b.APIGroups) && slices.Equal(a.Resources, b.Resources) && slices.Equal(a.Verbs, b.Verbs) &&
		len(a.ResourceNames) == 0 && len(b.ResourceNames) == 0 && len(a.NonResourceURLs) == 0 && len(b.NonResourceURLs) == 0
}

func find(objs []*unstructured.Unstructured, id string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind()+"/"+o.GetName() == id {
			return o
		}
	}
	return nil
}

func podTemplate(t *testing.T, objs []*unstructured.Unstructured, id string) PodTemplate {
	t.Helper()
	pods, err := PodTemplates(objs)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		if p.Object == id {
			return p
		}
	}
	t.Fatalf("%s not rendered", id)
	return PodTemplate{}
}

func container(t *testing.T, objs []*unstructured.Unstructured, id string) corev1.Container {
	t.Helper()
	return podTemplate(t, objs, id).Spec.Containers[0]
}

func envValue(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// TestOperatorSchedulingAndMemoryLimit: operator.scans.* become the
// operator's cluster-wide scheduling flags, and both Go services derive
// GOMEMLIMIT from their own container's memory limit.
func TestOperatorSchedulingAndMemoryLimit(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	objs, err := Template(ctx, repoRoot, releaseNS, withScan("--set", "operator.scans.maxConcurrent=25",
		"--set", "operator.scans.rescansPerMinute=0", "--set", "operator.scans.rescanJitter=0.25", "--set", "operator.scans.stuckGrace=90s")...)
	if err != nil {
		t.Fatal(err)
	}
	operator := container(t, objs, "Deployment/crowsnest-operator")
	for _, want := range []string{"--max-concurrent-scans=25", "--rescans-per-minute=0", "--rescan-jitter=0.25", "--stuck-grace=90s"} {
		if !slices.Contains(operator.Args, want) {
			t.Errorf("operator args %q lack %s", operator.Args, want)
		}
	}
	for _, id := range []string{"Deployment/crowsnest-operator", "Deployment/crowsnest-results-api"} {
		c := container(t, objs, id)
		var ref *corev1.ResourceFieldSelector
		for _, e := range c.Env {
			if e.Name == "CROWSNEST_MEMORY_LIMIT" && e.ValueFrom != nil {
				ref = e.ValueFrom.ResourceFieldRef
			}
		}
		if ref == nil || ref.Resource != "limits.memory" || (ref.ContainerName != "" && ref.ContainerName != c.Name) {
			t.Errorf("%s: CROWSNEST_MEMORY_LIMIT is not its own limits.memory: %+v", id, ref)
		}
	}

	// A jitter the operator would refuse is refused at install.
	if _, err := Template(ctx, repoRoot, releaseNS, withScan("--set", "operator.scans.rescanJitter=0.9")...); err == nil {
		t.Error("operator.scans.rescanJitter=0.9 rendered; the schema must refuse it (the operator allows at most 0.5)")
	}
}
