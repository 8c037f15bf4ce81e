package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crowsnest-dev/crowsnest/test/stack/internal/proc"
)

// kubeletConfig is the KubeletConfiguration that works on this VM (DESIGN.md,
// "A real node runs here"): cgroupfs without per-QoS cgroups or node
// allocatable enforcement on cgroup v1; the kubelet's API on the node's
// address with client certificates only; Pod logs, and everything else,
// under the node's directory; no DNS from the host: Pods resolve through
// the stack's cluster DNS (ClusterDNS) or not at all. The kubelet writes no
// iptables rules (makeIPTablesUtilChains: false): the host's ruleset is
// kube-proxy's to touch, and kube-proxy removes what it wrote.
func kubeletConfig(c Config, port int, endpoint string) string {
	var taints strings.Builder
	for _, t := range c.Taints {
		fmt.Fprintf(&taints, "- key: %q\n  value: %q\n  effect: %q\n", t.Key, t.Value, t.Effect)
	}
	tl := "registerWithTaints: []\n"
	if taints.Len() > 0 {
		tl = "registerWithTaints:\n" + taints.String()
	}
	if len(c.ClusterDNS) > 0 {
		tl += fmt.Sprintf("clusterDomain: %q\nclusterDNS:\n", c.ClusterDomain)
		for _, ip := range c.ClusterDNS {
			tl += fmt.Sprintf("- %q\n", ip)
		}
	}
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %q
port: %d
readOnlyPort: 0
healthzPort: 0
tlsCertFile: %q
tlsPrivateKeyFile: %q
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: %q
authorization:
  mode: Webhook
containerRuntimeEndpoint: %q
cgroupDriver: cgroupfs
cgroupsPerQOS: false
failCgroupV1: false
enforceNodeAllocatable: []
failSwapOn: false
localStorageCapacityIsolation: true
podLogsDir: %q
resolvConf: ""
makeIPTablesUtilChains: false
serializeImagePulls: false
maxPods: 32
evictionHard:
  memory.available: "100Mi"
  nodefs.available: "1%%"
  nodefs.inodesFree: "1%%"
  imagefs.available: "1%%"
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
nodeStatusUpdateFrequency: 5s
syncFrequency: 10s
fileCheckFrequency: 20s
shutdownGracePeriod: 0s
%s`, c.Network.Gateway.String(), port, c.PKI.ServingCertFile, c.PKI.ServingKeyFile, c.PKI.CAFile,
		endpoint, filepath.Join(c.Dir, "pod-logs"), tl)
}

// startKubelet runs the kubelet and waits until its Node is Ready.
func (n *Node) startKubelet(ctx context.Context) error {
	dir := filepath.Join(n.c.Dir, "kubelet")
	if err := os.MkdirAll(filepath.Join(n.c.Dir, "pod-logs"), 0o700); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	port, err := proc.FreePort()
	if err != nil {
		return err
	}
	n.KubeletPort = port
	cfg := filepath.Join(n.c.Dir, "kubelet-config.yaml")
	if err := os.WriteFile(cfg, []byte(kubeletConfig(n.c, port, "unix://"+socketPath(n.containerdDir()))), 0o600); err != nil {
		return err
	}
	labels := make([]string, 0, len(n.c.Labels))
	for k, v := range n.c.Labels {
		labels = append(labels, k+"="+v)
	}
	sort.Strings(labels)
	args := []string{
		"--config=" + cfg, "--kubeconfig=" + n.c.Kubeconfig, "--root-dir=" + dir, "--cert-dir=" + filepath.Join(dir, "pki"),
		"--hostname-override=" + n.c.Name, "--node-ip=" + n.c.Network.Gateway.String(), "--v=" + strconv.Itoa(n.c.Verbosity),
	}
	if len(labels) > 0 {
		args = append(args, "--node-labels="+strings.Join(labels, ","))
	}
	p, err := proc.Start(proc.Spec{Name: "kubelet", LogDir: n.c.LogDir, Binary: n.c.Kubelet, Args: args})
	if err != nil {
		return err
	}
	n.kubelet = p
	deadline := time.Now().Add(60 * time.Second)
	for {
		node, err := n.c.Client.CoreV1().Nodes().Get(ctx, n.c.Name, metav1.GetOptions{})
		if err == nil && ready(node) {
			return nil
		}
		select {
		case <-p.Done():
			return fmt.Errorf("kubelet exited while starting: %w\n%s", p.Err(), proc.LogTail(p.Log, 15))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = errors.New("the kubelet reports it not Ready")
			}
			return fmt.Errorf("node %s not Ready after 60s: %w\n%s", n.c.Name, err, proc.LogTail(p.Log, 15))
		}
	}
}

func ready(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
