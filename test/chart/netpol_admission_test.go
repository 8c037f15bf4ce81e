package charttest

import (
	"context"
	"strings"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestOperatorNetworkPolicyGuardOnAPIServer: with a ClusterScanner and
// NetworkPolicies on, the operator's ClusterRole may write NetworkPolicies
// in any namespace (it keeps the scan Pods' policy in each one the
// ClusterScanner covers). The test plays a compromised operator on the real
// API server with the chart's RBAC and admission policy: it may write only
// its own scan policies; opening a tenant's Pods, taking over or deleting a
// tenant's policy is refused with the policy's message.
func TestOperatorNetworkPolicyGuardOnAPIServer(t *testing.T) {
	const release, ns, apps = "vapnp", "vapnp-system", "vapnp-apps"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin, err := kubernetes.NewForConfig(apiCfg)
	if err != nil {
		t.Fatal(err)
	}
	createNamespaces(ctx, t, admin, ns, apps)
	applyScanPolicies(ctx, t, admin, release, ns, append([]string{"--set", "global.networkPolicy.enabled=true"}, clusterScannerArgs...)...)
	cfg := rest.CopyConfig(apiCfg)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":" + release + "-operator",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}}
	operator, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	nps := func(c kubernetes.Interface) func(context.Context, *networkingv1.NetworkPolicy, metav1.CreateOptions) (*networkingv1.NetworkPolicy, error) {
		return c.NetworkingV1().NetworkPolicies(apps).Create
	}
	policy := func(name string, selector map[string]string, labelled bool) *networkingv1.NetworkPolicy {
		np := &networkingv1.NetworkPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: apps, Labels: map[string]string{}},
			Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: selector},
				PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
				Ingress:     []networkingv1.NetworkPolicyIngressRule{{}}, Egress: []networkingv1.NetworkPolicyEgressRule{{}}},
		}
		if labelled {
			np.Labels["app.kubernetes.io/managed-by"] = "crowsnest-operator"
		}
		return np
	}
	scanPods := map[string]string{"app.kubernetes.io/name": "crowsnest-scan", "app.kubernetes.io/managed-by": "crowsnest-operator"}
	web := map[string]string{"app": "web"}
	const refused = "the Crowsnest operator may only write its own scan NetworkPolicies"

	// The tenant's own policy isolating its web Pods.
	tenantPolicy := policy("web-isolation", web, false)
	tenantPolicy.Spec.Ingress, tenantPolicy.Spec.Egress = nil, nil
	if _, err := admin.NetworkingV1().NetworkPolicies(apps).Create(ctx, tenantPolicy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The policy loads asynchronously: wait (bounded) for its first refusal.
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := operator.NetworkingV1().NetworkPolicies(apps).Create(ctx, policy("probe", web, true), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil && strings.Contains(err.Error(), refused) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the policy is not in force after 30s: the operator's policy for tenant Pods gets %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}

	for _, c := range []struct {
		name string
		do   func() error
		deny bool
	}{
		{"open the tenant's web Pods (labelled as the operator's)", func() error { return create(ctx, nps(operator), policy("open-web", web, true)) }, true},
		{"a policy of every Pod", func() error { return create(ctx, nps(operator), policy("open-all", map[string]string{}, true)) }, true},
		{"the scan selector plus a tenant label", func() error {
			return create(ctx, nps(operator), policy("wider", map[string]string{"app.kubernetes.io/name": "crowsnest-scan",
				"app.kubernetes.io/managed-by": "crowsnest-operator", "app": "web"}, true))
		}, true},
		{"the scan policy without the operator's label", func() error { return create(ctx, nps(operator), policy("unlabelled", scanPods, false)) }, true},
		{"take over the tenant's policy", func() error {
			np, err := admin.NetworkingV1().NetworkPolicies(apps).Get(ctx, tenantPolicy.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			np.Labels = map[string]string{"app.kubernetes.io/managed-by": "crowsnest-operator"}
			np.Spec.PodSelector = metav1.LabelSelector{MatchLabels: scanPods}
			_, err = operator.NetworkingV1().NetworkPolicies(apps).Update(ctx, np, metav1.UpdateOptions{})
			return err
		}, true},
		{"delete the tenant's policy", func() error {
			return operator.NetworkingV1().NetworkPolicies(apps).Delete(ctx, tenantPolicy.Name, metav1.DeleteOptions{})
		}, true},

		{"its scan policy: create", func() error { return create(ctx, nps(operator), policy("crowsnest-scan", scanPods, true)) }, false},
		{"its scan policy: restore the spec", func() error {
			np, err := operator.NetworkingV1().NetworkPolicies(apps).Get(ctx, "crowsnest-scan", metav1.GetOptions{})
			if err != nil {
				return err
			}
			np.Spec.Ingress = nil
			_, err = operator.NetworkingV1().NetworkPolicies(apps).Update(ctx, np, metav1.UpdateOptions{})
			return err
		}, false},
		{"its scan policy: delete", func() error {
			return operator.NetworkingV1().NetworkPolicies(apps).Delete(ctx, "crowsnest-scan", metav1.DeleteOptions{})
		}, false},
	} {
		err := c.do()
		switch {
		case !c.deny && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.deny && err == nil:
			t.Errorf("%s: allowed, want refused by the policy", c.name)
		case c.deny && !strings.Contains(err.Error(), refused):
			t.Errorf("%s: %v, want the policy's refusal %q", c.name, err, refused)
		}
	}
	got, err := admin.NetworkingV1().NetworkPolicies(apps).Get(ctx, tenantPolicy.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the tenant's policy: %v", err)
	}
	if got.Labels["app.kubernetes.io/managed-by"] != "" || got.Spec.PodSelector.MatchLabels["app"] != "web" {
		t.Fatalf("the tenant's policy changed: %+v", got)
	}
}
