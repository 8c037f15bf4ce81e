package e2e

import (
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/crowsnest-dev/crowsnest/test/stack"
	"github.com/crowsnest-dev/crowsnest/test/stack/internal/clusterdns"
	"github.com/crowsnest-dev/crowsnest/test/stack/internal/netcheck"
	"github.com/crowsnest-dev/crowsnest/test/stack/internal/workload"
)

// TestServicesOnTheRealNode: on the shared stack, a Pod on the real node
// resolves a Service's name through the stack's CoreDNS (the kubelet's
// clusterDNS) to its ClusterIP, in the stack's own Service CIDR, and
// reaches the backend Pod through kube-proxy; a name outside the cluster
// does not resolve. (internal/node's TestServicesAndDNSOnTheRealNode checks
// that stopping leaves no rule behind.)
func TestServicesOnTheRealNode(t *testing.T) {
	needFull(t)
	if shared.KubeProxy == nil {
		t.Skip("another stack on this machine runs kube-proxy (its chains are machine-wide): ClusterIPs do not route in this one")
	}
	ctx := withTimeout(t, 3*time.Minute)
	ns := "e2e-services"
	if err := workload.EnsureNamespace(ctx, shared.Client, ns); err != nil {
		t.Fatal(err)
	}
	image, err := netcheck.PushImage(ctx, shared.Registry, filepath.Join(shared.Options.Root, "test", "stack"), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	at := netcheck.Placement{
		NodeName:    stack.NodeName,
		Tolerations: []corev1.Toleration{{Key: stack.NodeTaint, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
		Labels:      map[string]string{workload.IgnoreLabel: "true"}, // not a workload to scan
	}
	c := shared.Cluster.Client
	clusterIP, err := netcheck.Echo(ctx, c, ns, image, at)
	if err != nil {
		t.Fatal(err)
	}
	if !shared.Network.ServiceCIDR.Contains(net.ParseIP(clusterIP)) {
		t.Errorf("ClusterIP %s is outside the stack's Service CIDR %s", clusterIP, shared.Network.ServiceCIDR)
	}
	name := "echo." + ns + ".svc." + clusterdns.Domain
	logs, err := netcheck.Probe(ctx, c, ns, image, at, name+":80", "example.com")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs, "resolved "+name+" ["+clusterIP+"]") {
		t.Errorf("%s did not resolve to the Service's ClusterIP %s:\n%s", name, clusterIP, logs)
	}
	if !strings.Contains(logs, "connected "+clusterIP+":80 netprobe echo") {
		t.Errorf("no answer from the backend Pod through the ClusterIP:\n%s", logs)
	}
	if !strings.Contains(logs, "not resolved example.com") {
		t.Errorf("example.com resolved through the cluster DNS:\n%s", logs)
	}
}
