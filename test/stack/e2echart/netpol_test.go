package e2echart

import (
	"context"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/crowsnest-dev/crowsnest/test/stack"
	"github.com/crowsnest-dev/crowsnest/test/stack/internal/netcheck"
)

// tenant is a namespace the chart neither owns nor scans.
const tenant = "tenant"

// networkPolicies plays a tenant and a scan Pod against the installed
// chart's NetworkPolicies, enforced on the real node by the stack's
// kube-router firewall (stack.Options.NetworkPolicies). Each probe is a Pod
// that connects over TCP (2 s each) until, in one round, every flow
// expected to fail failed and every one expected to work worked — the
// latter in the same round, so a broken network cannot pass. Without the
// enforcer (CROWSNEST_E2E_NO_NETPOL=1) the tenant reaches NATS and the step
// fails.
//
//   - A tenant Pod (namespace tenant, no policy of its own) cannot reach
//     NATS (client and monitor ports) or
//     the operator's health port; it reaches results-api through its
//     Service by name (DNS included) and its metrics port, and the matcher
//     (the chart lets anyone reach the matcher's one port: scan Pods of any
//     namespace and Prometheus; its import API takes the admin token).
//   - A Pod labelled as a scan Pod in the scanned namespace (the scan
//     policy selects Pods by those labels) reaches results-api's HTTP port
//     and the matcher, and not NATS, Postgres, results-api's metrics port
//     (open to everyone else: only the scan Pod's egress stops it) or the
//     operator.
//
// The stack's Postgres is the chart's external database, not a Pod: no
// NetworkPolicy selects it, so the tenant's connect to it is reported, not
// judged (an external database is closed by its own network's rules).
func networkPolicies(ctx context.Context, t *testing.T, c kubernetes.Interface, _ *workloads) {
	image, err := netcheck.PushImage(ctx, cluster.Registry, filepath.Join(cluster.Options.Root, "test", "stack"), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// NATS's Service is headless (a StatefulSet's): clients connect to the
	// Pod's address. Flows expected to fail name addresses, never names, so
	// that a failed lookup cannot pass for a refused connection.
	natsPod := podIP(ctx, t, c, "nats")
	operatorHealth := net.JoinHostPort(podIP(ctx, t, c, "operator"), "8081")
	api := release + "-results-api." + namespace + ".svc.cluster.local:80"
	apiMetrics := net.JoinHostPort(podIP(ctx, t, c, "results-api"), "9090")
	matcher := serviceAddr(ctx, t, c, "matcher", "8080")
	pg, err := url.Parse(cluster.Postgres.PodURL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenant}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitDefaultServiceAccount(ctx, t, c, tenant)
	// The operator's ignore label: no scan is made of the probe's image.
	at := netcheck.Placement{NodeName: stack.NodeName, Labels: map[string]string{"crowsnest.dev/ignore": "true"}}
	start := time.Now()
	logs, err := netcheck.Run(ctx, c, tenant, "tenant-probe", image, at, "expect", "60",
		"deny:"+net.JoinHostPort(natsPod, "4222"), "deny:"+net.JoinHostPort(natsPod, "8222"), "deny:"+operatorHealth,
		"allow:"+api, "allow:"+apiMetrics, "allow:"+matcher, "report:"+pg.Host)
	if err != nil {
		t.Fatalf("a tenant Pod's flows are not what the chart's NetworkPolicies allow: %v", err)
	}
	t.Logf("tenant Pod (%s):\n%s", time.Since(start).Round(time.Millisecond), logs)

	scanAt := at
	scanAt.Labels = map[string]string{"crowsnest.dev/ignore": "true",
		"app.kubernetes.io/name": "crowsnest-scan", "app.kubernetes.io/managed-by": "crowsnest-operator"}
	start = time.Now()
	logs, err = netcheck.Run(ctx, c, scanned, "scan-probe", image, scanAt, "expect", "60",
		"allow:"+api, "allow:"+matcher,
		"deny:"+net.JoinHostPort(natsPod, "4222"), "deny:"+pg.Host, "deny:"+apiMetrics, "deny:"+operatorHealth)
	if err != nil {
		t.Fatalf("a scan Pod's flows are not what the chart's NetworkPolicies allow: %v", err)
	}
	t.Logf("scan Pod (%s):\n%s", time.Since(start).Round(time.Millisecond), logs)
	for _, ns := range []string{tenant, scanned} {
		_ = c.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "crowsnest.dev/ignore=true"})
	}
}

// serviceAddr is the ClusterIP:port of the chart's Service of component.
func serviceAddr(ctx context.Context, t *testing.T, c kubernetes.Interface, component, port string) string {
	t.Helper()
	svc, err := c.CoreV1().Services(namespace).Get(ctx, release+"-"+component, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ip := net.ParseIP(svc.Spec.ClusterIP); ip == nil {
		t.Fatalf("Service %s has no ClusterIP (%q)", svc.Name, svc.Spec.ClusterIP)
	}
	return net.JoinHostPort(svc.Spec.ClusterIP, port)
}

// podIP is the address of a running Pod of the chart's component.
func podIP(ctx context.Context, t *testing.T, c kubernetes.Interface, component string) string {
	t.Helper()
	pods, err := c.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=" + component})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil && p.Status.PodIP != "" {
			return p.Status.PodIP
		}
	}
	t.Fatalf("no running %s Pod in %s", component, namespace)
	return ""
}

// waitDefaultServiceAccount waits for the controller manager to create ns's
// default ServiceAccount (a Pod cannot be created before it).
func waitDefaultServiceAccount(ctx context.Context, t *testing.T, c kubernetes.Interface, ns string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if _, err := c.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{}); err == nil {
			return
		} else if time.Now().After(deadline) {
			t.Fatalf("no default ServiceAccount in %s after 30s: %v", ns, err)
		}
	}
}

// joinInts is a Helm --set list's items: 443,6443,36129.
func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}
