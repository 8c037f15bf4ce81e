package stack

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/crowsnest-dev/crowsnest/test/stack/internal/clusterdns"
	"github.com/crowsnest-dev/crowsnest/test/stack/internal/node"
	"github.com/crowsnest-dev/crowsnest/test/stack/internal/registry"
)

// The real node's name, and the label and taint that keep it for scan Pods:
// workload Pods stay on the kwok Nodes, where thousands are cheap; scan
// Pods select the node and tolerate its taint (the operator's
// --scan-pod-node-selector and --scan-pod-tolerations, what a user sets to
// keep scans on some nodes).
const (
	NodeName       = "crowsnest-node"
	NodeLabel      = "crowsnest.dev/node"
	NodeLabelValue = "real"
	NodeTaint      = "crowsnest.dev/real-node"
)

// startNetwork takes the node's Pod network and writes its PKI, before the
// control plane starts (kube-apiserver needs the kubelet client
// certificate) and before the services (they listen on its gateway).
func (s *Stack) startNetwork() (map[string]string, error) {
	netw, err := node.SetupNetwork()
	if err != nil {
		return nil, fmt.Errorf("node network: %w", err)
	}
	s.Network = netw
	s.closers = append(s.closers, func() { _ = netw.Close() })
	if s.pki, err = node.WritePKI(filepath.Join(s.Options.StateDir, "node-pki"), netw.Gateway); err != nil {
		return nil, err
	}
	args := s.pki.APIServerArgs()
	args["service-cluster-ip-range"] = netw.ServiceCIDR.String()
	return args, nil
}

// HostIP is the address the stack's services listen on: the node network's
// gateway, the one host address a Pod can reach (from a Pod, 127.0.0.1 is
// the Pod itself). Cluster-only stacks have no node and use loopback.
func (s *Stack) HostIP() string {
	if s.Network == nil {
		return "127.0.0.1"
	}
	return s.Network.Gateway.String()
}

func (s *Stack) hostAddr(addr string) string {
	if addr != "" {
		return addr
	}
	return net.JoinHostPort(s.HostIP(), "0")
}

// startNode pushes the node's pause image and the project's images named
// (make images: dist/images/<name>, as <registry>/crowsnest/crowsnest-<name>)
// into the stack's registry, then runs the cluster DNS, containerd and the
// kubelet, kube-proxy and (Options.NetworkPolicies) kube-router's firewall.
func (s *Stack) startNode(ctx context.Context, images []string) error {
	o := s.Options
	pauseBin := filepath.Join(o.StateDir, "pause")
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", pauseBin, "./cmd/pause")
	build.Dir = filepath.Join(o.Root, "test", "stack")
	build.Env = append(os.Environ(), "GOWORK=off", "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("build the pause program: %w\n%s", err, out)
	}
	pause, err := registry.PauseImage(pauseBin)
	if err != nil {
		return err
	}
	pauseRef, err := s.Registry.PushPlatform(ctx, pause)
	if err != nil {
		return err
	}
	s.Images = map[string]string{}
	for _, name := range images {
		if s.Images[name], err = s.Registry.PushLayout(ctx, filepath.Join(o.Bin.Images, name), "crowsnest-"+name); err != nil {
			return err
		}
	}
	s.UploaderImage, s.GrypeImage = s.Images["uploader"], s.Images["grype"]
	kubeconfig, err := s.Cluster.AddUser("system:node:"+NodeName, []string{"system:nodes"}, "kubelet.kubeconfig")
	if err != nil {
		return err
	}
	if err := s.startClusterDNS(ctx); err != nil {
		return err
	}
	// The chart's Pods run on the real node like any workload; otherwise
	// it is kept for scan Pods (workload Pods stay on kwok's Nodes).
	var taints []corev1.Taint
	if !o.Chart {
		taints = []corev1.Taint{{Key: NodeTaint, Value: "true", Effect: corev1.TaintEffectNoSchedule}}
	}
	start := time.Now()
	n, err := node.Start(ctx, node.Config{
		Dir: filepath.Join(o.StateDir, "node"), LogDir: o.StateDir, Name: NodeName,
		Kubelet: filepath.Join(o.Bin.KubeAssets, "kubelet"), Kubeconfig: kubeconfig,
		Network: s.Network, PKI: s.pki, SandboxImage: pauseRef, HTTPRegistries: []string{s.Registry.Host},
		Labels:     map[string]string{NodeLabel: NodeLabelValue},
		Taints:     taints,
		ClusterDNS: []string{s.Network.Gateway.String()}, ClusterDomain: clusterdns.Domain,
		Client: s.Cluster.Client, Log: s.Log,
	})
	if err != nil {
		return fmt.Errorf("real node: %w", err)
	}
	s.Node = n
	s.closers = append(s.closers, func() {
		if err := n.Stop(); err != nil {
			s.Log.Error("stop the real node", "error", err)
		}
	})
	s.Log.Info("real node Ready", "node", NodeName, "took", time.Since(start).Round(time.Millisecond))
	s.pauseImage, s.pauseBin = pauseRef, pauseBin
	if err := s.startKubeProxy(ctx); err != nil {
		return err
	}
	return s.startNetworkPolicies(ctx)
}

// PauseImage is the node's pause image in the stack's registry: a static
// program that blocks until it is signalled, which the node runs as any
// Pod's container (a workload that runs for real and holds no packages).
func (s *Stack) PauseImage() string { return s.pauseImage }

// ScanPodPlacement are the operator flags that put scan Pods on the real
// node.
func ScanPodPlacement() []string {
	return []string{
		"--scan-pod-node-selector=" + NodeLabel + "=" + NodeLabelValue,
		"--scan-pod-tolerations=" + NodeTaint + "=true:NoSchedule",
	}
}

// identityPod runs a Pod of namespace/sa on the real node whose only job
// is to hold a kubelet-mounted, Pod-bound projected token for results-api's
// audience, and returns the token file's path on the host. The kubelet
// writes and refreshes it, exactly as for the chart's matcher Pod: the
// matcher process of the stack reads it.
func (s *Stack) identityPod(ctx context.Context, namespace, sa, name string) (string, error) {
	c := s.Cluster.Client
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	if _, err := c.CoreV1().ServiceAccounts(namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: namespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	exp := int64(3600)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{"app.kubernetes.io/name": name}},
		Spec: corev1.PodSpec{
			ServiceAccountName: sa, AutomountServiceAccountToken: ptr.To(false),
			NodeSelector: map[string]string{NodeLabel: NodeLabelValue},
			Tolerations:  []corev1.Toleration{{Key: NodeTaint, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{
				Name: "identity", Image: s.pauseImage,
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
				VolumeMounts: []corev1.VolumeMount{{Name: "token", MountPath: "/var/run/secrets/crowsnest/token", ReadOnly: true}},
			}},
			Volumes: []corev1.Volume{{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Audience: TokenAudience, ExpirationSeconds: &exp, Path: "token"}}},
			}}}},
		},
	}
	created, err := c.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("create identity pod %s/%s: %w", namespace, name, err)
	}
	file := filepath.Join(s.Options.StateDir, "node", "kubelet", "pods", string(created.UID), "volumes", "kubernetes.io~projected", "token", "token")
	deadline := time.Now().Add(90 * time.Second)
	for {
		if _, err := os.Stat(file); err == nil {
			return file, nil
		}
		if time.Now().After(deadline) {
			p, _ := c.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
			return "", fmt.Errorf("the kubelet did not mount %s/%s's token in 90s (pod status %+v)", namespace, name, p.Status)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
