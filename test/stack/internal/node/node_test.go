package node_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/crowsnest-dev/crowsnest/test/stack/internal/controlplane"
	"github.com/crowsnest-dev/crowsnest/test/stack/internal/kubeproxy"
	"github.com/crowsnest-dev/crowsnest/test/stack/internal/node"
	"github.com/crowsnest-dev/crowsnest/test/stack/internal/registry"
	"github.com/crowsnest-dev/crowsnest/test/stack/internal/teardown"
)

// TestNodeRunsAPodAndLeavesNothing brings up a control plane, the node
// network, containerd and a real kubelet; runs a restricted-PSS Pod with a
// projected token; reads its logs through the API server (which dials the
// kubelet with its client certificate); then stops everything and lists
// what is left: no containerd, shim or kubelet process, no process or
// cgroup of the Pod's containers, no mount under the node's directory, no
// bridge, no veth, no network namespace file, no cached CNI result (Stop
// names any it had to remove).
func TestNodeRunsAPodAndLeavesNothing(t *testing.T) {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: run through make, which builds bin/k8s")
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
	// Host paths that exist now belong to someone else (another stack on
	// this machine); the rest must not exist after Stop.
	var absent []string
	for _, p := range []string{"/var/lib/kubelet", "/var/lib/cni", "/run/containerd", "/var/log/pods", "/var/run/netns"} {
		if _, err := os.Stat(p); err != nil {
			absent = append(absent, p)
		}
	}

	netw, err := node.SetupNetwork()
	if err != nil {
		t.Fatal(err)
	}
	bridge := netw.Bridge
	closeNet := steps.Add(netw.Close)
	pki, err := node.WritePKI(filepath.Join(state, "pki"), netw.Gateway)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := controlplane.Start(ctx, controlplane.Options{AssetsDir: assets, Kwok: filepath.Join(assets, "..", "kwok"), StateDir: state, Nodes: 1, APIServerArgs: pki.APIServerArgs()})
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
	kubeconfig, err := cp.AddUser("system:node:crowsnest-node", []string{"system:nodes"}, "kubelet.kubeconfig")
	if err != nil {
		t.Fatal(err)
	}
	nodeDir := filepath.Join(state, "node")
	n, err := node.Start(ctx, node.Config{
		Dir: nodeDir, LogDir: state, Kubelet: filepath.Join(assets, "kubelet"), Kubeconfig: kubeconfig,
		Network: netw, PKI: pki, SandboxImage: pauseRef, HTTPRegistries: []string{reg.Host},
		Labels: map[string]string{"crowsnest.dev/node": "real"},
		Taints: []corev1.Taint{{Key: "crowsnest.dev/real-node", Value: "true", Effect: corev1.TaintEffectNoSchedule}},
		Client: cp.Client,
	})
	if err != nil {
		t.Fatal(err)
	}
	stopNode := steps.Add(n.Stop)

	if _, err := cp.Client.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "probe"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := restrictedPod(pauseRef, n.Name())
	if _, err := cp.Client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var ip string
	deadline := time.Now().Add(2 * time.Minute)
	for {
		p, err := cp.Client.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
		if err == nil && p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" {
			ip = p.Status.PodIP
			if p.Status.ContainerStatuses[0].ImageID == "" {
				t.Error("the kubelet reported no imageID")
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod not running after 2m: %+v %v", p.Status, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !netw.Subnet.Contains(net.ParseIP(ip)) {
		t.Errorf("pod IP %s is not in the node's subnet %s", ip, netw.Subnet)
	}
	// Logs through the API server: it dials the kubelet on the node's
	// address with its client certificate and verifies the kubelet's.
	if _, err := cp.Client.CoreV1().Pods("default").GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx); err != nil {
		t.Errorf("logs through the API server: %v", err)
	}
	if veths := vethsOn(t, bridge); len(veths) == 0 {
		t.Error("no veth on the bridge while a Pod runs: the check below could not see one")
	}
	if os.Getenv(envStopChild) != "" {
		waitForTheStop(state, nodeDir, netw)
	}

	containers := node.ContainerIDs(nodeDir)
	if len(containers) == 0 {
		t.Error("no container in the node's task directory while a Pod runs: the check below could not see one")
	}
	if err := stopNode(); err != nil {
		t.Errorf("stop node: %v", err)
	}
	if err := closeNet(); err != nil {
		t.Errorf("close network: %v", err)
	}
	procs, cgroups := containersLeft(containers)
	for _, p := range procs {
		t.Errorf("left behind: container process %d", p)
	}
	for _, c := range cgroups {
		t.Errorf("left behind: cgroup %s", c)
	}
	if node.OthersRunning() {
		// Another stack's node (make e2e runs this package beside the
		// end-to-end suite) shares those host paths: check only what is
		// this node's (processes, mounts, bridge, veths, CNI results).
		t.Log("another node runs on this machine: the shared host paths are not checked")
		absent = nil
	}
	if results, _ := filepath.Glob("/var/lib/cni/results/" + netw.Name() + "-*"); len(results) > 0 {
		t.Errorf("left behind: CNI results %v", results)
	}
	for _, left := range Leftovers(t, nodeDir, bridge, absent, netw.Subnet, netw.ServiceCIDR) {
		t.Errorf("left behind: %s", left)
	}
}

func restrictedPod(image, nodeName string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "probe"},
		Spec: corev1.PodSpec{
			ServiceAccountName: "probe", NodeName: nodeName,
			Tolerations:     []corev1.Toleration{{Key: "crowsnest.dev/real-node", Operator: corev1.TolerationOpExists}},
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{
				Name: "main", Image: image,
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
			}},
		},
	}
}

// Leftovers lists what a stopped node left: its processes (with the
// kube-proxy and CoreDNS beside it), mounts under its directory, its bridge
// and the veths on it, network namespace files, and kube-proxy's iptables
// chains and any rule naming an address in cidrs (IPv4 and IPv6).
func Leftovers(t *testing.T, nodeDir, bridge string, hostPaths []string, cidrs ...*net.IPNet) []string {
	t.Helper()
	var out []string
	for _, comm := range []string{"containerd", "containerd-shim-runc-v2", "kubelet", "kube-proxy", "coredns"} {
		for _, pid := range pidsOf(t, comm) {
			cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			if strings.Contains(string(cmdline), filepath.Dir(nodeDir)) {
				out = append(out, fmt.Sprintf("process %d %s", pid, strings.ReplaceAll(string(cmdline), "\x00", " ")))
			}
		}
	}
	mps, err := node.MountsUnder(nodeDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, mp := range mps {
		out = append(out, "mount "+mp)
	}
	if _, err := net.InterfaceByName(bridge); err == nil {
		out = append(out, "bridge "+bridge)
	}
	for _, v := range vethsOn(t, bridge) {
		out = append(out, "veth "+v)
	}
	for _, p := range append([]string{nodeDir}, hostPaths...) {
		if _, err := os.Stat(p); err == nil {
			out = append(out, "path "+p)
		}
	}
	leftovers := kubeproxy.Leftovers
	if kubeproxy.Held() {
		// Another stack's kube-proxy: its chains are rightly there.
		leftovers = kubeproxy.Naming
	}
	rules, err := leftovers(cidrs...)
	if err != nil {
		t.Fatal(err)
	}
	return append(out, rules...)
}

func pidsOf(t *testing.T, comm string) []int {
	t.Helper()
	return processesWhose("comm", func(c string) bool { return strings.TrimSpace(c) == comm[:min(len(comm), 15)] })
}

// processesWhose lists the processes whose /proc/PID/file (comm, cmdline,
// cgroup) match says yes to.
func processesWhose(file string, match func(string) bool) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if b, err := os.ReadFile(filepath.Join("/proc", e.Name(), file)); err == nil && match(string(b)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// vethsOn lists the interfaces whose master is bridge.
func vethsOn(t *testing.T, bridge string) []string {
	t.Helper()
	entries, err := os.ReadDir("/sys/class/net")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		master, err := os.Readlink(filepath.Join("/sys/class/net", e.Name(), "master"))
		if err == nil && filepath.Base(master) == bridge {
			out = append(out, e.Name())
		}
	}
	return out
}
