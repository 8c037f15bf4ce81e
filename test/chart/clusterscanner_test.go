package charttest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// clusterScannerArgs render the chart with a ClusterScanner over the
// namespaces labelled team=a, besides the defaults and team-b.
var clusterScannerArgs = []string{"--set", "operator.clusterWide=true", "--set", "global.clusterScanner.enabled=true",
	"--set", "global.clusterScanner.namespaceSelector.matchLabels.team=a",
	"--set", "global.clusterScanner.excludeNamespaces={kube-system,team-b}",
	"--set", "global.clusterScanner.spec.maxConcurrentScans=3", "--set", "global.clusterScanner.spec.rescanInterval=12h"}

// TestClusterScannerChart: with global.clusterScanner the chart renders the
// ClusterScanner from the values, the operator's ClusterRole grants what its
// controller needs and the operator knows its namespace, results-api accepts
// the scan ServiceAccount of any namespace, and the scan identity policy
// holds in every namespace. Without it, a namespaced operator's Roles grant
// none of the ClusterScanner controller's rules.
func TestClusterScannerChart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	objs, err := Template(ctx, repoRoot, releaseNS, clusterScannerArgs...)
	if err != nil {
		t.Fatal(err)
	}

	cs := find(objs, "ClusterScanner/crowsnest")
	if cs == nil {
		t.Fatal("ClusterScanner/crowsnest not rendered")
	}
	if cs.GetNamespace() != "" || cs.GetAPIVersion() != "crowsnest.dev/v1alpha1" {
		t.Errorf("ClusterScanner %s in namespace %q", cs.GetAPIVersion(), cs.GetNamespace())
	}
	team, _, _ := unstructured.NestedString(cs.Object, "spec", "namespaceSelector", "matchLabels", "team")
	exclude, _, _ := unstructured.NestedStringSlice(cs.Object, "spec", "excludeNamespaces")
	scans, _, _ := unstructured.NestedFieldNoCopy(cs.Object, "spec", "scannerTemplate", "maxConcurrentScans")
	rescan, _, _ := unstructured.NestedString(cs.Object, "spec", "scannerTemplate", "rescanInterval")
	if team != "a" || !slices.Equal(exclude, []string{"kube-system", "team-b"}) || fmt.Sprint(scans) != "3" || rescan != "12h" {
		t.Errorf("ClusterScanner spec %v", cs.Object["spec"])
	}

	api := container(t, objs, "Deployment/crowsnest-results-api")
	for _, a := range []string{"--auth-mode=tokenreview", "--allowed-service-accounts=*/crowsnest-scan"} {
		if !slices.Contains(api.Args, a) {
			t.Errorf("results-api args %q lack %s", api.Args, a)
		}
	}

	operator := container(t, objs, "Deployment/crowsnest-operator")
	var nsFromPod bool
	for _, e := range operator.Env {
		nsFromPod = nsFromPod || (e.Name == "CROWSNEST_OPERATOR_NAMESPACE" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil &&
			e.ValueFrom.FieldRef.FieldPath == "metadata.namespace")
	}
	if !nsFromPod {
		t.Errorf("operator env %+v lacks CROWSNEST_OPERATOR_NAMESPACE from the Pod's namespace", operator.Env)
	}
	var role rbacv1.ClusterRole
	if err := fromUnstructured(find(objs, "ClusterRole/crowsnest-operator"), &role); err != nil {
		t.Fatal(err)
	}
	perm := func(group, resource, verb string) permission {
		return permission{group: group, resource: resource, verb: verb}
	}
	need := []permission{
		perm("crowsnest.dev", "clusterscanners", "watch"), perm("crowsnest.dev", "clusterscanners/status", "patch"),
		perm("crowsnest.dev", "clusterscanners/finalizers", "update"),
		perm("crowsnest.dev", "scanners", "create"), perm("crowsnest.dev", "scanners", "patch"), perm("crowsnest.dev", "scanners", "delete"),
		perm("", "namespaces", "list"), perm("", "namespaces", "watch"),
		perm("", "serviceaccounts", "create"), perm("", "serviceaccounts", "delete"), perm("", "serviceaccounts", "watch"),
		perm("networking.k8s.io", "networkpolicies", "create"), perm("networking.k8s.io", "networkpolicies", "update"),
		perm("networking.k8s.io", "networkpolicies", "delete"), perm("networking.k8s.io", "networkpolicies", "watch"),
	}
	for _, p := range need {
		if !grants(role.Rules, p) {
			t.Errorf("the operator's ClusterRole lacks %s", p)
		}
	}

	// The policy that keeps the scan ServiceAccount to the scan selects
	// requests by resource only: it holds in namespaces that did not exist
	// at install.
	var policy admissionv1.ValidatingAdmissionPolicy
	if err := fromUnstructured(find(objs, "ValidatingAdmissionPolicy/crowsnest-scan-identity"), &policy); err != nil {
		t.Fatal(err)
	}
	var binding admissionv1.ValidatingAdmissionPolicyBinding
	if err := fromUnstructured(find(objs, "ValidatingAdmissionPolicyBinding/crowsnest-scan-identity"), &binding); err != nil {
		t.Fatal(err)
	}
	if mc := policy.Spec.MatchConstraints; mc == nil || mc.NamespaceSelector != nil || mc.ObjectSelector != nil || binding.Spec.MatchResources != nil {
		t.Errorf("scan identity policy is limited to some namespaces or objects: %+v, binding %+v", mc, binding.Spec.MatchResources)
	}

	// NOTES.txt: uploads work (tokenreview mode), and the ClusterScanner is
	// named.
	out, err := RunHelm(ctx, repoRoot, append([]string{"install", "crowsnest", ChartDir, "--namespace", releaseNS,
		"--kubeconfig", writeKubeconfig(t), "--dry-run=client"}, clusterScannerArgs...)...)
	if err != nil {
		t.Fatal(err)
	}
	_, notes, _ := strings.Cut(string(out), "\nNOTES:\n")
	if !strings.Contains(notes, `The chart created ClusterScanner "crowsnest"`) || !strings.Contains(notes, "create token") ||
		strings.Contains(notes, "cannot upload") {
		t.Errorf("NOTES with a ClusterScanner:\n%s", notes)
	}

	// A namespaced operator: none of the ClusterScanner controller's rules.
	objs, err = Template(ctx, repoRoot, releaseNS, scanTeamA...)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"Role/crowsnest-operator", "ClusterRole/crowsnest-operator"} {
		var r rbacv1.ClusterRole
		if err := fromUnstructured(find(objs, id), &r); err != nil {
			t.Fatal(err)
		}
		for _, p := range []permission{perm("", "namespaces", "list"), perm("", "serviceaccounts", "create"), perm("crowsnest.dev", "clusterscanners", "list"),
			perm("crowsnest.dev", "clusterscanners/finalizers", "update"), perm("crowsnest.dev", "scanners", "create"), perm("crowsnest.dev", "scanners", "delete"),
			perm("networking.k8s.io", "networkpolicies", "create"), perm("networking.k8s.io", "networkpolicies", "delete")} {
			if grants(r.Rules, p) {
				t.Errorf("%s of a namespaced operator grants %s", id, p)
			}
		}
	}
}

// TestClusterScannerNetworkPolicyChart: with NetworkPolicies on, the
// operator gets the scan Pods' policy (the same spec the chart renders into
// global.scan.namespaces) from a mounted ConfigMap, to keep it in the
// namespaces the ClusterScanner covers; without NetworkPolicies it gets
// none.
func TestClusterScannerNetworkPolicyChart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	objs, err := Template(ctx, repoRoot, releaseNS, append([]string{"--set", "global.networkPolicy.enabled=true",
		"--set", "global.scan.namespaces={apps}"}, clusterScannerArgs...)...)
	if err != nil {
		t.Fatal(err)
	}
	cm := find(objs, "ConfigMap/crowsnest-scan-networkpolicy")
	if cm == nil {
		t.Fatal("ConfigMap/crowsnest-scan-networkpolicy not rendered")
	}
	raw, _, _ := unstructured.NestedString(cm.Object, "data", "spec.yaml")
	var fromCM networkingv1.NetworkPolicySpec
	if err := yaml.UnmarshalStrict([]byte(raw), &fromCM); err != nil {
		t.Fatalf("spec.yaml: %v\n%s", err, raw)
	}
	var np networkingv1.NetworkPolicy
	if err := fromUnstructured(find(objs, "NetworkPolicy/crowsnest-scan"), &np); err != nil {
		t.Fatal(err)
	}
	if np.Namespace != "apps" || !equality.Semantic.DeepEqual(fromCM, np.Spec) {
		t.Errorf("the operator's spec differs from the chart's scan policy in %q:\n%+v\n%+v", np.Namespace, fromCM, np.Spec)
	}
	operator := container(t, objs, "Deployment/crowsnest-operator")
	for _, a := range []string{"--scan-network-policy=/etc/crowsnest/scan-networkpolicy/spec.yaml", "--scan-network-policy-name=crowsnest-scan"} {
		if !slices.Contains(operator.Args, a) {
			t.Errorf("operator args %q lack %s", operator.Args, a)
		}
	}
	if !slices.ContainsFunc(operator.VolumeMounts, func(m corev1.VolumeMount) bool {
		return m.Name == "scan-networkpolicy" && m.MountPath == "/etc/crowsnest/scan-networkpolicy" && m.ReadOnly
	}) {
		t.Errorf("operator mounts %+v lack the scan policy", operator.VolumeMounts)
	}

	objs, err = Template(ctx, repoRoot, releaseNS, append([]string{"--set", "global.networkPolicy.enabled=false"}, clusterScannerArgs...)...)
	if err != nil {
		t.Fatal(err)
	}
	if find(objs, "ConfigMap/crowsnest-scan-networkpolicy") != nil || slices.ContainsFunc(container(t, objs, "Deployment/crowsnest-operator").Args,
		func(a string) bool { return strings.HasPrefix(a, "--scan-network-policy") }) {
		t.Error("without NetworkPolicies the operator still gets a scan policy")
	}
}
