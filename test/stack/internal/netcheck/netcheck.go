// Package netcheck checks ClusterIP Services and cluster DNS from inside
// Pods on the stack's real node, with the netprobe program
// (test/stack/cmd/netprobe) built into a small image: an echo backend
// behind a Service, and a probe Pod that resolves the Service's name and
// connects to it. Tests of the node (internal/node) and of the whole stack
// (e2e) share it.
package netcheck

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/crowsnest-dev/crowsnest/test/stack/internal/registry"
)

// PushImage builds cmd/netprobe of the test/stack module at moduleDir into
// dir and pushes it to reg as crowsnest/netprobe:test.
func PushImage(ctx context.Context, reg *registry.Registry, moduleDir, dir string) (string, error) {
	bin := filepath.Join(dir, "netprobe")
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", bin, "./cmd/netprobe")
	build.Dir = moduleDir
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build netprobe: %w\n%s", err, out)
	}
	img, err := registry.ProgramImage("netprobe", "test", bin)
	if err != nil {
		return "", err
	}
	return reg.PushPlatform(ctx, img)
}

// Placement puts a Pod on the real node.
type Placement struct {
	NodeName    string
	Tolerations []corev1.Toleration
	Labels      map[string]string // e.g. the operator's ignore label, so no scan is made of it
}

// Echo runs the backend Pod "echo" (netprobe serve 8080) in ns and a
// ClusterIP Service "echo" (port 80) in front of it, and returns the
// ClusterIP. ns must exist.
func Echo(ctx context.Context, c kubernetes.Interface, ns, image string, at Placement) (string, error) {
	// The Pods run as the namespace's default ServiceAccount, which the
	// controller manager creates a moment after the namespace.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if _, err := c.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{}); err == nil {
			break
		} else if time.Now().After(deadline) {
			return "", fmt.Errorf("no default ServiceAccount in %s after 30s: %w", ns, err)
		}
	}
	pod := probePod("echo", image, at, corev1.RestartPolicyAlways, "serve", "8080")
	pod.Labels["app"] = "echo"
	if _, err := c.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("create echo pod: %w", err)
	}
	svc, err := c.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "echo"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "echo"},
			Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}}},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("create echo service: %w", err)
	}
	return svc.Spec.ClusterIP, nil
}

// Probe runs netprobe dial args… in Pod "probe" of ns until it ends and
// returns its logs (read through the API server and the kubelet); a failed
// probe is an error carrying its logs.
func Probe(ctx context.Context, c kubernetes.Interface, ns, image string, at Placement, args ...string) (string, error) {
	return Run(ctx, c, ns, "probe", image, at, append([]string{"dial"}, args...)...)
}

// Run runs netprobe args… (any mode that ends) in Pod name of ns until it
// ends and returns its logs; a failed run is an error carrying its logs.
func Run(ctx context.Context, c kubernetes.Interface, ns, name, image string, at Placement, args ...string) (string, error) {
	pod := probePod(name, image, at, corev1.RestartPolicyNever, args...)
	if _, err := c.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("create %s pod: %w", name, err)
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		p, err := c.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err == nil && (p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed) {
			logs, err := c.CoreV1().Pods(ns).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
			if err != nil {
				return "", fmt.Errorf("%s logs: %w", name, err)
			}
			if p.Status.Phase == corev1.PodFailed {
				return string(logs), fmt.Errorf("%s/%s failed:\n%s", ns, name, logs)
			}
			return string(logs), nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("%s/%s not finished after 3m (status %+v): %w", ns, name, p.Status, err)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// probePod is a restricted-PSS Pod running netprobe.
func probePod(name, image string, at Placement, restart corev1.RestartPolicy, args ...string) *corev1.Pod {
	labels := map[string]string{}
	for k, v := range at.Labels {
		labels[k] = v
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: corev1.PodSpec{
			NodeName: at.NodeName, Tolerations: at.Tolerations, RestartPolicy: restart,
			AutomountServiceAccountToken: ptr.To(false),
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{
				Name: "netprobe", Image: image, Args: args,
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
			}},
		},
	}
}
