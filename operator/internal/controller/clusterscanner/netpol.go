package clusterscanner

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"slices"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/yaml"

	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
	"github.com/crowsnest-dev/crowsnest/operator/internal/scanjob"
)

// The scan NetworkPolicy: the chart can render the policy of scan Pods
// only into the namespaces it knows (global.scan.namespaces); a
// ClusterScanner covers namespaces chosen by labels, created after the
// install. With --scan-network-policy the operator keeps the chart's policy
// in every namespace a ClusterScanner covers, as it keeps the scan
// ServiceAccount there.
//
// A NetworkPolicy can only add allowances for the Pods it selects, so a
// policy whose podSelector is exactly the scan Pods' labels can never open
// or close anything for a tenant's own Pods. LoadScanNetworkPolicy refuses
// any other selector, and the chart's admission policy holds the operator
// to the same rule at the API server (a compromised operator cannot use
// the permission on tenants' policies).

// ScanPodSelector is the only podSelector a scan NetworkPolicy may have:
// the labels every scan Pod carries and no tenant Pod may (the admission
// policy reserves the operator's label).
func ScanPodSelector() metav1.LabelSelector {
	return metav1.LabelSelector{MatchLabels: map[string]string{
		scanjob.LabelName: scanjob.AppName, scanjob.LabelManagedBy: scanjob.ManagedBy,
	}}
}

// LoadScanNetworkPolicy reads the NetworkPolicy spec of scan Pods from a
// YAML (or JSON) file: unknown fields are errors, the podSelector must be
// exactly ScanPodSelector, and the policy must cover both directions (a
// policy of one direction would leave the other open).
func LoadScanNetworkPolicy(path string) (*networkingv1.NetworkPolicySpec, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("scan network policy: %w", err)
	}
	var spec networkingv1.NetworkPolicySpec
	if err := yaml.UnmarshalStrict(bytes.TrimSpace(raw), &spec); err != nil {
		return nil, fmt.Errorf("scan network policy %s: %w", path, err)
	}
	if want := ScanPodSelector(); !equality.Semantic.DeepEqual(spec.PodSelector, want) {
		return nil, fmt.Errorf("scan network policy %s: podSelector must be exactly matchLabels %v (the scan Pods), got %v",
			path, want.MatchLabels, metav1.FormatLabelSelector(&spec.PodSelector))
	}
	if !slices.Contains(spec.PolicyTypes, networkingv1.PolicyTypeIngress) || !slices.Contains(spec.PolicyTypes, networkingv1.PolicyTypeEgress) {
		return nil, fmt.Errorf("scan network policy %s: policyTypes must list Ingress and Egress, got %v", path, spec.PolicyTypes)
	}
	return &spec, nil
}

// networkPolicyUpdate is a scan NetworkPolicy as observed and as it
// should be.
type networkPolicyUpdate struct{ have, want *networkingv1.NetworkPolicy }

// planNetworkPolicy adds to p what namespace ns needs: the policy where
// self covers it, the configured spec restored where it drifted, and the
// operator's policy removed where no ClusterScanner claims the namespace.
func planNetworkPolicy(p *clusterPlan, obs *clusterObserved, ns string, covered, claimed, deleting bool) {
	if obs.networkPolicy == nil {
		return
	}
	np, managed := obs.networkPolicies[ns]
	switch {
	case covered && !managed:
		p.createNPs = append(p.createNPs, ns)
	case covered && !equality.Semantic.DeepEqual(np.Spec, *obs.networkPolicy):
		fixed := np.DeepCopy()
		fixed.Spec = *obs.networkPolicy.DeepCopy()
		p.updateNPs = append(p.updateNPs, networkPolicyUpdate{have: np, want: fixed})
	case !claimed && managed && !deleting:
		p.deleteNPs = append(p.deleteNPs, np)
	}
}

// scanNetworkPolicy is the scan NetworkPolicy the operator creates in a
// covered namespace: labelled as the operator's (only such ones are
// changed or deleted) and owned by cs, so that it goes with the
// ClusterScanner.
func scanNetworkPolicy(cs *crowsnestv1alpha1.ClusterScanner, name, ns string, spec *networkingv1.NetworkPolicySpec) *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: ns,
			Labels: map[string]string{scanjob.LabelManagedBy: scanjob.ManagedBy, crowsnestv1alpha1.LabelClusterScanner: cs.Name},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: crowsnestv1alpha1.GroupVersion.String(), Kind: "ClusterScanner", Name: cs.Name, UID: cs.UID,
			}},
		},
		Spec: *spec.DeepCopy(),
	}
}

// scanNetworkPolicyChanged passes deletions of the operator's scan
// NetworkPolicy (the cache holds only the operator's) and changes of its
// spec or labels, so that it is made again or restored.
func scanNetworkPolicyChanged(name string) predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		DeleteFunc:  func(e event.DeleteEvent) bool { return e.Object != nil && e.Object.GetName() == name },
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*networkingv1.NetworkPolicy)
			n, ok2 := e.ObjectNew.(*networkingv1.NetworkPolicy)
			return ok1 && ok2 && n.Name == name &&
				(!equality.Semantic.DeepEqual(o.Spec, n.Spec) || !maps.Equal(o.Labels, n.Labels))
		},
	}
}
