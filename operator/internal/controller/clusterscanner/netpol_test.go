package clusterscanner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crowsnest-dev/crowsnest/operator/internal/scanjob"
)

// testScanPolicy is a scan NetworkPolicy as the chart renders it: no
// ingress, egress to DNS and 443 only.
func testScanPolicy() *networkingv1.NetworkPolicySpec {
	tcp, udp := ptr.To(corev1.ProtocolTCP), ptr.To(corev1.ProtocolUDP)
	return &networkingv1.NetworkPolicySpec{
		PodSelector: ScanPodSelector(),
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
		Ingress:     []networkingv1.NetworkPolicyIngressRule{},
		Egress: []networkingv1.NetworkPolicyEgressRule{
			{Ports: []networkingv1.NetworkPolicyPort{{Protocol: tcp, Port: ptr.To(intstr.FromInt32(443))}}},
			{Ports: []networkingv1.NetworkPolicyPort{{Protocol: udp, Port: ptr.To(intstr.FromInt32(53))}}},
		},
	}
}

// scanPolicyIn returns the scan NetworkPolicy named name in ns, or nil.
func scanPolicyIn(t *testing.T, ns, name string) *networkingv1.NetworkPolicy {
	t.Helper()
	var np networkingv1.NetworkPolicy
	err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &np)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return &np
}

func scanPoliciesIn(t *testing.T, name string, candidates ...string) []string {
	t.Helper()
	var out []string
	for _, ns := range candidates {
		if scanPolicyIn(t, ns, name) != nil {
			out = append(out, ns)
		}
	}
	slices.Sort(out)
	return out
}

// TestClusterScannerKeepsScanNetworkPolicy: with --scan-network-policy the
// policy is in exactly the covered namespaces, with the configured spec;
// a tenant's edit is undone, a deleted one is made again, a namespace
// relabelled out loses it, and a tenant's own policy of the same name is
// left as it is.
func TestClusterScannerKeepsScanNetworkPolicy(t *testing.T) {
	ctx := context.Background()
	scope := fmt.Sprintf("netpol-%d", nsCounter.Add(1))
	sel := map[string]string{testScopeLabel: scope}
	a, b, tenants := labelledNamespace(t, sel), labelledNamespace(t, sel), labelledNamespace(t, sel)
	outside := newNamespace(t)
	all := []string{a, b, tenants, outside}
	const name = "crowsnest-scan"
	theirs := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: tenants, Labels: map[string]string{"team": "a"}},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
		},
	}
	if err := k8s.Create(ctx, theirs); err != nil {
		t.Fatal(err)
	}
	want := testScanPolicy()
	startClusterScanners(t, Options{NetworkPolicy: want, NetworkPolicyName: name})
	cs := newClusterScanner(t, "netpol-"+scope, scope)

	eventually(t, 15*time.Second, "scan NetworkPolicies", sameSet("NetworkPolicies", func() []string {
		return scanPoliciesIn(t, name, all...)
	}, a, b, tenants))
	for _, ns := range []string{a, b} {
		np := scanPolicyIn(t, ns, name)
		if !equality.Semantic.DeepEqual(np.Spec, *want) {
			t.Fatalf("%s: spec %+v, want %+v", ns, np.Spec, *want)
		}
		if np.Labels[scanjob.LabelManagedBy] != scanjob.ManagedBy || len(np.OwnerReferences) != 1 || np.OwnerReferences[0].UID != cs.UID {
			t.Fatalf("%s: not the operator's, owned by the ClusterScanner: %+v", ns, np.ObjectMeta)
		}
	}
	if got := scanPolicyIn(t, tenants, name); got.UID != theirs.UID || !equality.Semantic.DeepEqual(got.Spec, theirs.Spec) || len(got.OwnerReferences) != 0 {
		t.Fatalf("tenant's policy changed: %+v", got)
	}

	// A tenant opens the scan Pods' ingress: the operator restores the spec.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		np := scanPolicyIn(t, a, name)
		np.Spec.Ingress = []networkingv1.NetworkPolicyIngressRule{{}}
		return k8s.Update(ctx, np)
	})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "edited policy restored", func() error {
		if np := scanPolicyIn(t, a, name); np == nil || !equality.Semantic.DeepEqual(np.Spec, *want) {
			return fmt.Errorf("spec not restored: %+v", np)
		}
		return nil
	})

	// Deleted: made again.
	old := scanPolicyIn(t, b, name)
	if err := k8s.Delete(ctx, old); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "deleted policy made again", func() error {
		if np := scanPolicyIn(t, b, name); np == nil || np.UID == old.UID {
			return fmt.Errorf("not made again: %+v", np)
		}
		return nil
	})

	// Relabelled out: removed there, kept elsewhere; the tenant's stays.
	setNamespaceLabels(t, a, nil)
	eventually(t, 10*time.Second, "policy removed from an uncovered namespace", sameSet("NetworkPolicies", func() []string {
		return scanPoliciesIn(t, name, all...)
	}, b, tenants))
	if got := scanPolicyIn(t, tenants, name); got.UID != theirs.UID {
		t.Fatalf("tenant's policy replaced: %+v", got.ObjectMeta)
	}
}

// TestLoadScanNetworkPolicy: the file must select exactly the scan Pods and
// cover both directions; unknown fields are errors.
func TestLoadScanNetworkPolicy(t *testing.T) {
	dir := t.TempDir()
	write := func(body string) string {
		p := filepath.Join(dir, fmt.Sprintf("p%d.yaml", nsCounter.Add(1)))
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := `
podSelector:
  matchLabels:
    app.kubernetes.io/name: crowsnest-scan
    app.kubernetes.io/managed-by: crowsnest-operator
policyTypes: [Ingress, Egress]
ingress: []
egress:
  - ports: [{port: 443, protocol: TCP}]
`
	spec, err := LoadScanNetworkPolicy(write(good))
	if err != nil {
		t.Fatal(err)
	}
	if len(spec.Egress) != 1 || spec.Egress[0].Ports[0].Port.IntValue() != 443 {
		t.Fatalf("egress %+v", spec.Egress)
	}
	for name, c := range map[string]struct{ body, want string }{
		"every Pod":      {strings.Replace(good, "  matchLabels:\n    app.kubernetes.io/name: crowsnest-scan\n    app.kubernetes.io/managed-by: crowsnest-operator\n", " {}\n", 1), "podSelector must be exactly"},
		"tenant Pods":    {strings.Replace(good, "crowsnest-scan", "web", 1), "podSelector must be exactly"},
		"extra selector": {strings.Replace(good, "    app.kubernetes.io/managed-by: crowsnest-operator\n", "    app.kubernetes.io/managed-by: crowsnest-operator\n  matchExpressions: [{key: tier, operator: Exists}]\n", 1), "podSelector must be exactly"},
		"egress only":    {strings.Replace(good, "[Ingress, Egress]", "[Egress]", 1), "policyTypes must list Ingress and Egress"},
		"unknown field":  {good + "egres: []\n", "unknown field"},
		"missing file":   {"", "no such file"},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, "absent.yaml")
			if c.body != "" {
				path = write(c.body)
			}
			_, err := LoadScanNetworkPolicy(path)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want %q", err, c.want)
			}
		})
	}
}
