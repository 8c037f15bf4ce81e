package node_test

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crowsnest-dev/crowsnest/test/stack/internal/clusterdns"
	"github.com/crowsnest-dev/crowsnest/test/stack/internal/controlplane"
	"github.com/crowsnest-dev/crowsnest/test/stack/internal/kubeproxy"
	"github.com/crowsnest-dev/crowsnest/test/stack/internal/netcheck"
	"github.com/crowsnest-dev/crowsnest/test/stack/internal/node"
	"github.com/crowsnest-dev/crowsnest/test/stack/internal/registry"
	"github.com/crowsnest-dev/crowsnest/test/stack/internal/teardown"
)

// TestServicesAndDNSOnTheRealNode runs the real node with the stack's
// CoreDNS (the kubelet's clusterDNS) and kube-proxy beside it: a Pod
// resolves echo.<ns>.svc.cluster.local through CoreDNS to the Service's
// ClusterIP and reaches the Service's backend, another Pod on the node,
// through kube-proxy's rules; a name outside the cluster does not resolve.
// Then everything stops and nothing may be left: no process, mount, bridge
// or veth, and no kube-proxy chain or rule naming the stack's addresses in
// the host's iptables (IPv4 and IPv6).
func TestServicesAndDNSOnTheRealNode(t *testing.T) {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: run through make, which builds bin/k8s")
	}
	coredns := filepath.Join(assets, "..", "coredns")
	if _, err := os.Stat(coredns); err != nil {
		t.Fatalf("bin/coredns: %v (hack/tools.sh coredns builds it; make stack-deps runs it)", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	// Everything started below stops at the end, also when the test
	// binary is stopped with SIGTERM (TestStoppedMidTestLeavesNothing),
	// and its state directory goes last: not t.TempDir, which a stopped
	// test binary leaves.
	steps := teardown.ForTest(t)
	state, err := os.MkdirTemp("", "crowsnest-node-test-")
	if err != nil {
		t.Fatal(err)
	}
	steps.Add(func() error { return os.RemoveAll(state) })
	// KUBE-FIREWALL may be the kubelet's (of another node on this machine):
	// after the stop it must be as it was before.
	firewallBefore, err := kubeproxy.FirewallChains()
	if err != nil {
		t.Fatal(err)
	}
	netw, err := node.SetupNetwork()
	if err != nil {
		t.Fatal(err)
	}
	closeNet := steps.Add(netw.Close)
	pki, err := node.WritePKI(filepath.Join(state, "pki"), netw.Gateway)
	if err != nil {
		t.Fatal(err)
	}
	apiArgs := pki.APIServerArgs()
	apiArgs["service-cluster-ip-range"] = netw.ServiceCIDR.String()
	cp, err := controlplane.Start(ctx, controlplane.Options{AssetsDir: assets, Kwok: filepath.Join(assets, "..", "kwok"), StateDir: state, Nodes: 1, APIServerArgs: apiArgs})
	if err != nil {
		t.Fatal(err)
	}
	steps.Add(cp.Stop)
	reg, err := registry.Start(ctx, net.JoinHostPort(netw.Gateway.String(), "0"), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	steps.Add(reg.Close)
	pauseBin := filepath.Join(state, "pause")
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", pauseBin, "../../cmd/pause")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build pause: %v\n%s", err, out)
	}
	pause, err := registry.PauseImage(pauseBin)
	if err != nil {
		t.Fatal(err)
	}
	pauseRef, err := reg.PushPlatform(ctx, pause)
	if err != nil {
		t.Fatal(err)
	}
	probeRef, err := netcheck.PushImage(ctx, reg, "../..", state)
	if err != nil {
		t.Fatal(err)
	}

	dnsKubeconfig, err := cp.AddUser(clusterdns.User, nil, "coredns.kubeconfig")
	if err != nil {
		t.Fatal(err)
	}
	if err := clusterdns.Grant(ctx, cp.Client); err != nil {
		t.Fatal(err)
	}
	dnsStart := time.Now()
	dns, err := clusterdns.Start(ctx, clusterdns.Config{Binary: coredns, Dir: state, LogDir: state, Kubeconfig: dnsKubeconfig, Address: netw.Gateway})
	if err != nil {
		t.Fatal(err)
	}
	stopDNS := steps.Add(dns.Stop)
	t.Logf("CoreDNS ready in %s", time.Since(dnsStart).Round(time.Millisecond))

	kubeconfig, err := cp.AddUser("system:node:crowsnest-node", []string{"system:nodes"}, "kubelet.kubeconfig")
	if err != nil {
		t.Fatal(err)
	}
	nodeDir := filepath.Join(state, "node")
	n, err := node.Start(ctx, node.Config{
		Dir: nodeDir, LogDir: state, Kubelet: filepath.Join(assets, "kubelet"), Kubeconfig: kubeconfig,
		Network: netw, PKI: pki, SandboxImage: pauseRef, HTTPRegistries: []string{reg.Host},
		ClusterDNS: []string{netw.Gateway.String()}, ClusterDomain: clusterdns.Domain, Client: cp.Client,
	})
	if err != nil {
		t.Fatal(err)
	}
	stopNode := steps.Add(n.Stop)
	// The API server's bootstrap policy binds system:node-proxier to
	// this user.
	proxyKubeconfig, err := cp.AddUser("system:kube-proxy", nil, "kube-proxy.kubeconfig")
	if err != nil {
		t.Fatal(err)
	}
	proxyStart := time.Now()
	kp, err := kubeproxy.Start(ctx, kubeproxy.Config{Binary: filepath.Join(assets, "kube-proxy"), Dir: state, LogDir: state,
		Kubeconfig: proxyKubeconfig, NodeName: n.Name(), NodeIP: netw.Gateway, PodCIDR: netw.Subnet, ServiceCIDR: netw.ServiceCIDR})
	if errors.Is(err, kubeproxy.ErrBusy) {
		t.Skipf("cannot run here now: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kube-proxy ready in %s", time.Since(proxyStart).Round(time.Millisecond))
	stopProxy := steps.Add(kp.Stop)

	ns := "services"
	if _, err := cp.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	at := netcheck.Placement{NodeName: n.Name()}
	clusterIP, err := netcheck.Echo(ctx, cp.Client, ns, probeRef, at)
	if err != nil {
		t.Fatal(err)
	}
	logs, err := netcheck.Probe(ctx, cp.Client, ns, probeRef, at, "echo."+ns+".svc."+clusterdns.Domain+":80", "example.com")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("probe:\n%s", logs)
	if !strings.Contains(logs, "resolved echo."+ns+".svc.cluster.local ["+clusterIP+"]") {
		t.Errorf("the name did not resolve to the Service's ClusterIP %s:\n%s", clusterIP, logs)
	}
	if !strings.Contains(logs, "connected "+clusterIP+":80 netprobe echo") {
		t.Errorf("no answer from the backend Pod through the ClusterIP:\n%s", logs)
	}
	if !netw.ServiceCIDR.Contains(net.ParseIP(clusterIP)) {
		t.Errorf("ClusterIP %s is outside the stack's Service CIDR %s", clusterIP, netw.ServiceCIDR)
	}
	if rules, err := kubeproxy.Naming(netw.ServiceCIDR); err != nil || len(rules) == 0 {
		t.Errorf("no rule names the Service CIDR while kube-proxy runs (%v): the check below could not see one", err)
	}

	if err := stopProxy(); err != nil {
		t.Errorf("stop kube-proxy: %v", err)
	}
	if err := stopNode(); err != nil {
		t.Errorf("stop node: %v", err)
	}
	if err := stopDNS(); err != nil {
		t.Errorf("stop coredns: %v", err)
	}
	if err := closeNet(); err != nil {
		t.Errorf("close network: %v", err)
	}
	for _, left := range Leftovers(t, nodeDir, netw.Bridge, nil, netw.Subnet, netw.ServiceCIDR) {
		t.Errorf("left behind: %s", left)
	}
	if after, err := kubeproxy.FirewallChains(); err != nil {
		t.Error(err)
	} else if !kubeproxy.Held() && after["iptables"] && !firewallBefore["iptables"] {
		t.Error("left behind: iptables filter chain KUBE-FIREWALL (kube-proxy's copy of the kubelet's)")
	}
}
