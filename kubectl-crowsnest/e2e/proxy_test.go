package e2e

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// These tests send the plugin's requests to the real API server's service
// proxy. None gets through to results-api: the proxy dials the Service's
// endpoint IP, the API server refuses loopback endpoints
// (TestProxyRefusesLoopbackEndpoints) and these tests use loopback only.
// What they do prove is the API server's side: who it lets through, and
// what the plugin says for each refusal.

// TestProxyUnauthorized: credentials the API server does not accept.
func TestProxyUnauthorized(t *testing.T) {
	kc := kubeconfig(t, func(u *clientcmdapi.AuthInfo) {
		u.ClientCertificateData, u.ClientKeyData, u.Token = nil, nil, "not-a-valid-token"
	})
	_, _, err := plugin(t, "images", "-A", "--kubeconfig", kc)
	if err == nil || !strings.Contains(err.Error(), "the Kubernetes API server rejected your credentials (401") {
		t.Fatalf("err %v", err)
	}
}

// TestProxyForbidden: a user without get on services/proxy is refused by
// the API server's RBAC, and told which role to ask for.
func TestProxyForbidden(t *testing.T) {
	kc := kubeconfig(t, nil)
	_, _, err := plugin(t, "images", "-n", "shop", "--kubeconfig", kc, "--as", "alice")
	for _, want := range []string{"your credentials cannot read Crowsnest reports in namespace shop", `User "alice" cannot get resource "services/proxy"`, "crowsnest-view"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err %v, want %q", err, want)
		}
	}
}

// TestProxyServiceMissing: the message says how to point the plugin at
// results-api's Service.
func TestProxyServiceMissing(t *testing.T) {
	kc := kubeconfig(t, nil)
	_, _, err := plugin(t, "changes", "--kubeconfig", kc, "--service", "results", "--service-namespace", "tools")
	if err == nil || !strings.Contains(err.Error(), "service tools/results not found") || !strings.Contains(err.Error(), "--service and --service-namespace") {
		t.Fatalf("err %v", err)
	}
}

// TestProxyGrantedReachesService: with get on services/proxy for the name
// the plugin asks for, the API server lets the user through to the Service
// and answers that it has no endpoints (there is no results-api Pod here).
// RBAC sees the proxied name as "<scheme>:<service>:<port>", so a role
// restricted by resourceNames must list that form; the bare Service name
// is not enough, as the second user shows.
func TestProxyGrantedReachesService(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "crowsnest")
	_, err := kube.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "crowsnest-results-api"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// What the endpoints controller (not running here) writes for a
	// Service whose Pods are not ready: an Endpoints object without
	// addresses.
	_, err = kube.CoreV1().Endpoints(ns).Create(ctx, &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "crowsnest-results-api"}}, //nolint:staticcheck // the service proxy reads Endpoints
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	grant(t, ns, "bob", "http:crowsnest-results-api:http")
	grant(t, ns, "carol", "crowsnest-results-api")
	kc := kubeconfig(t, nil)

	_, _, err = plugin(t, "images", "-A", "--kubeconfig", kc, "--service-namespace", ns, "--as", "bob")
	if err == nil || !strings.Contains(err.Error(), "the API server cannot reach results-api through service "+ns+"/crowsnest-results-api") ||
		!strings.Contains(err.Error(), "no endpoints available") {
		t.Fatalf("bob: %v", err)
	}
	_, _, err = plugin(t, "images", "-A", "--kubeconfig", kc, "--service-namespace", ns, "--as", "carol")
	if err == nil || !strings.Contains(err.Error(), "your credentials cannot read Crowsnest reports cluster-wide") {
		t.Fatalf("carol: %v", err)
	}
}

// grant lets user get services/proxy for one resource name in ns.
func grant(t *testing.T, ns, user, resourceName string) {
	t.Helper()
	ctx := context.Background()
	name := "proxy-" + user
	_, err := kube.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"services/proxy"}, Verbs: []string{"get"}, ResourceNames: []string{resourceName}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: user}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// TestProxyRefusesLoopbackEndpoints pins why no test here goes through the
// proxy to a results-api: the API server will not take a loopback address
// as a Service endpoint, and loopback is all these tests may listen on.
func TestProxyRefusesLoopbackEndpoints(t *testing.T) {
	ns := namespace(t, "loopback")
	_, err := kube.CoreV1().Endpoints(ns).Create(context.Background(), &corev1.Endpoints{ //nolint:staticcheck // the service proxy reads Endpoints
		ObjectMeta: metav1.ObjectMeta{Name: "crowsnest-results-api"},
		Subsets: []corev1.EndpointSubset{{ //nolint:staticcheck // as above
			Addresses: []corev1.EndpointAddress{{IP: "127.0.0.1"}},
			Ports:     []corev1.EndpointPort{{Name: "http", Port: 8080}},
		}},
	}, metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("Endpoints at 127.0.0.1: %v, want a refusal naming the loopback range", err)
	}
}
