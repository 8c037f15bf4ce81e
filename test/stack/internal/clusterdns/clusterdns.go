package clusterdns

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/crowsnest-dev/crowsnest/test/stack/internal/proc"
)

// Domain is the cluster domain (the kubelet's clusterDomain).
const Domain = "cluster.local"

// User is CoreDNS's identity; Grant gives it read access to what the
// kubernetes plugin watches.
const User = "crowsnest:coredns"

// Config describes the DNS server.
type Config struct {
	Binary     string // coredns (hack/tools.sh coredns)
	Dir        string // the Corefile
	LogDir     string // coredns.log
	Kubeconfig string // User's credentials
	// Address is where it listens, UDP and TCP port 53: the node's gateway,
	// the kubelet's clusterDNS.
	Address net.IP
}

// Server is a running CoreDNS.
type Server struct {
	p *proc.Process
	// Addr is Address:53.
	Addr string
}

// Corefile serves the cluster domain and the reverse zones from the API
// server and nothing else (no forward plugin: other names are REFUSED).
// readyPort is the ready plugin's (200 once the kubernetes plugin has
// synced).
func Corefile(c Config, readyPort int) string {
	return fmt.Sprintf(`%s:53 in-addr.arpa:53 ip6.arpa:53 {
    bind %s
    ready 127.0.0.1:%d
    errors
    log . "{remote} {type} {name} {rcode} {duration}"
    kubernetes %s in-addr.arpa ip6.arpa {
        kubeconfig %s
        pods disabled
        ttl 5
    }
    cache 5
    loadbalance
}
`, Domain, c.Address, readyPort, Domain, c.Kubeconfig)
}

// Start runs CoreDNS and waits until its kubernetes plugin has synced.
func Start(ctx context.Context, c Config) (*Server, error) {
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return nil, err
	}
	readyPort, err := proc.FreePort()
	if err != nil {
		return nil, err
	}
	corefile := filepath.Join(c.Dir, "Corefile")
	if err := os.WriteFile(corefile, []byte(Corefile(c, readyPort)), 0o600); err != nil {
		return nil, err
	}
	p, err := proc.Start(proc.Spec{Name: "coredns", LogDir: c.LogDir, Binary: c.Binary, Args: []string{"-conf", corefile}})
	if err != nil {
		return nil, err
	}
	if err := p.WaitReady(ctx, 30*time.Second, proc.HTTPOK(fmt.Sprintf("http://127.0.0.1:%d/ready", readyPort))); err != nil {
		_ = p.Stop(5 * time.Second)
		return nil, fmt.Errorf("coredns: %w", err)
	}
	return &Server{p: p, Addr: net.JoinHostPort(c.Address.String(), "53")}, nil
}

// Stop ends CoreDNS.
func (s *Server) Stop() error { return s.p.Stop(5 * time.Second) }

// Grant gives User list and watch on what the kubernetes plugin reads
// (Services, EndpointSlices, Namespaces) and nothing else.
func Grant(ctx context.Context, c kubernetes.Interface) error {
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: User},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"services", "namespaces"}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
		},
	}
	if _, err := c.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create ClusterRole %s: %w", User, err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: User},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: User},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: User}},
	}
	if _, err := c.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create ClusterRoleBinding %s: %w", User, err)
	}
	return nil
}

// ServiceName is the cluster DNS's Service in kube-system, as kubeadm and
// most distributions name it (charts and NetworkPolicies look it up).
const ServiceName = "kube-dns"

// Publish creates the kube-dns Service at clusterIP (no selector: CoreDNS
// runs beside the kubelet, not in a Pod) with an EndpointSlice on addr,
// port 53 over UDP and TCP, so kube-proxy routes the ClusterIP to it.
func Publish(ctx context.Context, c kubernetes.Interface, clusterIP, addr net.IP) error {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: ServiceName, Namespace: metav1.NamespaceSystem,
			Labels: map[string]string{"k8s-app": "kube-dns", "kubernetes.io/name": "CoreDNS"}},
		Spec: corev1.ServiceSpec{ClusterIP: clusterIP.String(), Ports: []corev1.ServicePort{
			{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromInt32(53)},
			{Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(53)},
		}},
	}
	if _, err := c.CoreV1().Services(metav1.NamespaceSystem).Create(ctx, svc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create Service %s: %w", ServiceName, err)
	}
	udp, tcp := corev1.ProtocolUDP, corev1.ProtocolTCP
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: ServiceName + "-stack", Namespace: metav1.NamespaceSystem, Labels: map[string]string{
			discoveryv1.LabelServiceName: ServiceName, discoveryv1.LabelManagedBy: "crowsnest-stack"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{addr.String()}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports: []discoveryv1.EndpointPort{
			{Name: ptr.To("dns"), Port: ptr.To[int32](53), Protocol: &udp},
			{Name: ptr.To("dns-tcp"), Port: ptr.To[int32](53), Protocol: &tcp},
		},
	}
	if _, err := c.DiscoveryV1().EndpointSlices(metav1.NamespaceSystem).Create(ctx, slice, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create the EndpointSlice of %s: %w", ServiceName, err)
	}
	return nil
}
