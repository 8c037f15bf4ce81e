package charttest

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
)

// Policies evaluates the rendered NetworkPolicies for connections between
// Pods of one namespace, with Kubernetes' semantics: a Pod selected by no
// policy of a direction is open in that direction; otherwise some rule of
// a selecting policy must allow the peer and the port (named ports resolve
// against the destination's container ports). ipBlock and namespaceSelector
// peers never match a Pod here: every flow checked is in-namespace.
type Policies struct{ items []networkingv1.NetworkPolicy }

// LoadPolicies collects the NetworkPolicies among objs.
func LoadPolicies(objs []*unstructured.Unstructured) (*Policies, error) {
	p := &Policies{}
	for _, o := range objs {
		if o.GetKind() != "NetworkPolicy" {
			continue
		}
		var np networkingv1.NetworkPolicy
		if err := fromUnstructured(o, &np); err != nil {
			return nil, err
		}
		p.items = append(p.items, np)
	}
	return p, nil
}

// Allowed reports whether a Pod labelled from may open a TCP connection to
// port of the Pod to.
func (p *Policies) Allowed(from, to PodTemplate, port int32) (bool, error) {
	egress, err := p.direction(networkingv1.PolicyTypeEgress, from, to, to, port)
	if err != nil || !egress {
		return false, err
	}
	return p.direction(networkingv1.PolicyTypeIngress, to, from, to, port)
}

// direction checks the policies selecting subject in one direction for peer.
func (p *Policies) direction(dir networkingv1.PolicyType, subject, peer, dest PodTemplate, port int32) (bool, error) {
	selected := false
	for _, np := range p.items {
		if !slices.Contains(np.Spec.PolicyTypes, dir) {
			continue
		}
		ok, err := matches(&np.Spec.PodSelector, subject.Meta.Labels)
		if err != nil || !ok {
			if err != nil {
				return false, err
			}
			continue
		}
		selected = true
		type rule struct {
			peers []networkingv1.NetworkPolicyPeer
			ports []networkingv1.NetworkPolicyPort
		}
		var rules []rule
		if dir == networkingv1.PolicyTypeEgress {
			for _, r := range np.Spec.Egress {
				rules = append(rules, rule{r.To, r.Ports})
			}
		} else {
			for _, r := range np.Spec.Ingress {
				rules = append(rules, rule{r.From, r.Ports})
			}
		}
		for _, r := range rules {
			peerOK := len(r.peers) == 0
			for _, pe := range r.peers {
				if pe.PodSelector == nil || pe.NamespaceSelector != nil || pe.IPBlock != nil {
					continue
				}
				ok, err := matches(pe.PodSelector, peer.Meta.Labels)
				if err != nil {
					return false, err
				}
				peerOK = peerOK || ok
			}
			if peerOK && portAllowed(r.ports, dest.Spec, port) {
				return true, nil
			}
		}
	}
	return !selected, nil
}

func matches(sel *metav1.LabelSelector, l map[string]string) (bool, error) {
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return false, fmt.Errorf("bad selector %v: %w", sel, err)
	}
	return s.Matches(labels.Set(l)), nil
}

func portAllowed(ports []networkingv1.NetworkPolicyPort, dest corev1.PodSpec, port int32) bool {
	if len(ports) == 0 {
		return true
	}
	for _, pp := range ports {
		if pp.Protocol != nil && *pp.Protocol != corev1.ProtocolTCP {
			continue
		}
		if pp.Port == nil {
			return true
		}
		if pp.Port.IntValue() == int(port) && pp.Port.IntVal != 0 {
			return true
		}
		for _, c := range dest.Containers {
			for _, cp := range c.Ports {
				if cp.Name != "" && cp.Name == pp.Port.StrVal && cp.ContainerPort == port {
					return true
				}
			}
		}
	}
	return false
}
