package charttest

import (
	"fmt"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Endpoint is one end of a connection: a Pod (its namespace, labels and
// container ports), or, with IP set, an address outside the cluster's Pods
// (the kube-apiserver, a registry, an external database).
type Endpoint struct {
	Name      string
	Namespace string
	Labels    map[string]string
	Ports     []corev1.ContainerPort // resolve named ports
	IP        string
}

// PodEndpoint is a rendered workload's Pod running in namespace.
func PodEndpoint(p PodTemplate, namespace string) Endpoint {
	var ports []corev1.ContainerPort
	for _, c := range p.Spec.Containers {
		ports = append(ports, c.Ports...)
	}
	return Endpoint{Name: p.Object, Namespace: namespace, Labels: p.Meta.Labels, Ports: ports}
}

// External is an address outside the cluster's Pods.
func External(name, ip string) Endpoint { return Endpoint{Name: name, IP: ip} }

func (e Endpoint) String() string {
	if e.IP != "" {
		return e.Name + " (" + e.IP + ")"
	}
	return e.Namespace + "/" + e.Name
}

// namespaceLabels are the labels the API server puts on every namespace.
func (e Endpoint) namespaceLabels() map[string]string {
	return map[string]string{corev1.LabelMetadataName: e.Namespace}
}

// Policies evaluates rendered NetworkPolicies for TCP connections, with
// Kubernetes' semantics: a Pod selected by no policy of its namespace in a
// direction is open in that direction; otherwise some rule of a selecting
// policy must allow the peer and the port (named ports resolve against the
// destination's container ports). A peer with only a podSelector is a Pod
// of the policy's own namespace; a namespaceSelector matches the
// kubernetes.io/metadata.name label. ipBlock peers match only addresses
// outside the cluster's Pods (for Pod IPs CNIs differ, so nothing may rely
// on it), and those addresses are selected by no policy.
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
		if np.Namespace == "" {
			return nil, fmt.Errorf("NetworkPolicy %s has no namespace", np.Name)
		}
		p.items = append(p.items, np)
	}
	return p, nil
}

// Allowed reports whether from may open a TCP connection to port of to.
func (p *Policies) Allowed(from, to Endpoint, port int32) (bool, error) {
	egress, err := p.direction(networkingv1.PolicyTypeEgress, from, to, to, port)
	if err != nil || !egress {
		return false, err
	}
	return p.direction(networkingv1.PolicyTypeIngress, to, from, to, port)
}

// direction checks the policies selecting subject in one direction for peer.
func (p *Policies) direction(dir networkingv1.PolicyType, subject, peer, dest Endpoint, port int32) (bool, error) {
	if subject.IP != "" {
		return true, nil
	}
	selected := false
	for _, np := range p.items {
		if np.Namespace != subject.Namespace || !slices.Contains(np.Spec.PolicyTypes, dir) {
			continue
		}
		ok, err := matches(&np.Spec.PodSelector, subject.Labels)
		if err != nil {
			return false, err
		}
		if !ok {
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
				ok, err := peerMatches(np.Namespace, pe, peer)
				if err != nil {
					return false, err
				}
				peerOK = peerOK || ok
			}
			if peerOK && portAllowed(r.ports, dest, port) {
				return true, nil
			}
		}
	}
	return !selected, nil
}

// peerMatches: does one peer of a policy in namespace match e?
func peerMatches(namespace string, pe networkingv1.NetworkPolicyPeer, e Endpoint) (bool, error) {
	if pe.IPBlock != nil {
		if e.IP == "" {
			return false, nil
		}
		return inBlock(pe.IPBlock, e.IP)
	}
	if e.IP != "" {
		return false, nil
	}
	nsOK := e.Namespace == namespace
	if pe.NamespaceSelector != nil {
		ok, err := matches(pe.NamespaceSelector, e.namespaceLabels())
		if err != nil {
			return false, err
		}
		nsOK = ok
	}
	if !nsOK || pe.PodSelector == nil {
		return nsOK, nil
	}
	return matches(pe.PodSelector, e.Labels)
}

func inBlock(b *networkingv1.IPBlock, ip string) (bool, error) {
	addr, err := netip.ParseAddr(ip)
	if err != nil {
		return false, err
	}
	contains := func(cidr string) (bool, error) {
		p, err := netip.ParsePrefix(cidr)
		if err != nil {
			return false, fmt.Errorf("ipBlock %q: %w", cidr, err)
		}
		return p.Contains(addr), nil
	}
	in, err := contains(b.CIDR)
	if err != nil || !in {
		return false, err
	}
	for _, ex := range b.Except {
		out, err := contains(ex)
		if err != nil || out {
			return false, err
		}
	}
	return true, nil
}

func matches(sel *metav1.LabelSelector, l map[string]string) (bool, error) {
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return false, fmt.Errorf("bad selector %v: %w", sel, err)
	}
	return s.Matches(labels.Set(l)), nil
}

func portAllowed(ports []networkingv1.NetworkPolicyPort, dest Endpoint, port int32) bool {
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
		if pp.Port.Type == intstr.Int {
			if n := pp.Port.IntVal; n == port || (pp.EndPort != nil && n <= port && port <= *pp.EndPort) {
				return true
			}
			continue
		}
		for _, cp := range dest.Ports {
			if cp.Name != "" && cp.Name == pp.Port.StrVal && cp.ContainerPort == port {
				return true
			}
		}
	}
	return false
}
