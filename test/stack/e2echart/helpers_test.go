package e2echart

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// tool runs bin/<name> (helm, kubectl) against the cluster as its admin,
// with helm's caches in the state dir, and returns its standard output
// (its warnings on standard error go into the error only).
func tool(ctx context.Context, t *testing.T, name string, args ...string) (string, error) {
	t.Helper()
	home := filepath.Join(cluster.Options.StateDir, "helm-home")
	cmd := exec.CommandContext(ctx, filepath.Join(cluster.Options.Root, "bin", name), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+cluster.Cluster.Kubeconfig,
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"), "HELM_CONFIG_HOME="+filepath.Join(home, "config"), "HELM_DATA_HOME="+filepath.Join(home, "data"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w\n%s%s", name, strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out), nil
}

// waitWorkloadsReady waits until every Deployment and StatefulSet in ns
// has all its replicas ready at its current generation and no Pod of ns
// is terminating, and returns how many there are. On timeout the error
// tells what is not ready and why (Pod phases, container states, recent
// events).
func waitWorkloadsReady(ctx context.Context, c kubernetes.Interface, ns string, timeout time.Duration) (int, error) {
	deadline := time.Now().Add(timeout)
	for {
		deps, err := c.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return 0, err
		}
		sts, err := c.AppsV1().StatefulSets(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return 0, err
		}
		var waiting []string
		for _, d := range deps.Items {
			if !deploymentReady(&d) {
				waiting = append(waiting, fmt.Sprintf("Deployment %s (%d/%d ready)", d.Name, d.Status.ReadyReplicas, ptrOr(d.Spec.Replicas, 1)))
			}
		}
		for _, s := range sts.Items {
			if !statefulSetReady(&s) {
				waiting = append(waiting, fmt.Sprintf("StatefulSet %s (%d/%d ready)", s.Name, s.Status.ReadyReplicas, ptrOr(s.Spec.Replicas, 1)))
			}
		}
		// A rolled Deployment counts Ready while its old Pods still
		// terminate, and kubectl port-forward svc/… may pick such a Pod and
		// die with it: wait until they are gone.
		pods, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return 0, err
		}
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil {
				waiting = append(waiting, fmt.Sprintf("Pod %s (terminating)", p.Name))
			}
		}
		n := len(deps.Items) + len(sts.Items)
		if len(waiting) == 0 && n > 0 {
			return n, nil
		}
		if time.Now().After(deadline) {
			return n, fmt.Errorf("not ready after %s: %s\n%s", timeout, strings.Join(waiting, ", "), describePods(ctx, c, ns))
		}
		select {
		case <-ctx.Done():
			return n, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

func deploymentReady(d *appsv1.Deployment) bool {
	want := ptrOr(d.Spec.Replicas, 1)
	// Replicas counts the Pods of every ReplicaSet: equal to want once the
	// old ones are scaled down, as kubectl rollout status waits for.
	return d.Status.ObservedGeneration >= d.Generation && d.Status.UpdatedReplicas == want &&
		d.Status.Replicas == want && d.Status.ReadyReplicas == want && d.Status.AvailableReplicas == want
}

func statefulSetReady(s *appsv1.StatefulSet) bool {
	want := ptrOr(s.Spec.Replicas, 1)
	return s.Status.ObservedGeneration >= s.Generation && s.Status.ReadyReplicas == want && s.Status.CurrentRevision == s.Status.UpdateRevision
}

func ptrOr(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}

// describePods says, for each Pod of ns, its phase, node, each container's
// state and restarts, and the namespace's last warning events: what a
// person runs kubectl describe for.
func describePods(ctx context.Context, c kubernetes.Interface, ns string) string {
	var b strings.Builder
	pods, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	for _, p := range pods.Items {
		fmt.Fprintf(&b, "pod %s: %s on %q\n", p.Name, p.Status.Phase, p.Spec.NodeName)
		for _, cs := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
			fmt.Fprintf(&b, "  %s ready=%t restarts=%d %s\n", cs.Name, cs.Ready, cs.RestartCount, containerState(cs))
		}
		for _, cond := range p.Status.Conditions {
			if cond.Status != corev1.ConditionTrue && cond.Message != "" {
				fmt.Fprintf(&b, "  %s: %s\n", cond.Type, cond.Message)
			}
		}
	}
	events, err := c.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "type=Warning"})
	if err == nil {
		for _, e := range events.Items {
			fmt.Fprintf(&b, "event %s/%s %s: %s (x%d)\n", e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message, e.Count)
		}
	}
	return b.String()
}

func containerState(cs corev1.ContainerStatus) string {
	s := cs.State
	switch {
	case s.Waiting != nil:
		return "waiting " + s.Waiting.Reason + ": " + s.Waiting.Message
	case s.Terminated != nil:
		return fmt.Sprintf("terminated %s exit %d: %s", s.Terminated.Reason, s.Terminated.ExitCode, s.Terminated.Message)
	case s.Running != nil:
		last := ""
		if t := cs.LastTerminationState.Terminated; t != nil {
			last = fmt.Sprintf(" (last: %s exit %d)", t.Reason, t.ExitCode)
		}
		return "running" + last
	}
	return "unknown"
}

// logsOf returns the last lines of every container of every Pod in ns
// (kubectl logs through the API server and the kubelet), for a failure.
func logsOf(ctx context.Context, t *testing.T, c kubernetes.Interface, ns string) string {
	pods, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, p := range pods.Items {
		for _, ctr := range p.Spec.Containers {
			out, _ := tool(ctx, t, "kubectl", "-n", ns, "logs", p.Name, "-c", ctr.Name, "--tail=15")
			fmt.Fprintf(&b, "--- %s/%s\n%s", p.Name, ctr.Name, out)
		}
	}
	return b.String()
}

var forwardingRE = regexp.MustCompile(`Forwarding from 127\.0\.0\.1:(\d+)`)

// portForward runs kubectl port-forward to target (svc/NAME:PORT) in ns
// and returns the local address; it stops with the test.
func portForward(ctx context.Context, t *testing.T, ns, target string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	resource, port, _ := strings.Cut(target, ":")
	cmd := exec.CommandContext(ctx, filepath.Join(cluster.Options.Root, "bin", "kubectl"), "-n", ns, "port-forward", resource, "--address=127.0.0.1", ":"+port)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+cluster.Cluster.Kubeconfig)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = cmd.Wait()
		_ = pw.Close()
	}()
	t.Cleanup(cancel)
	lines := bufio.NewScanner(pr)
	var said []string
	for lines.Scan() {
		if m := forwardingRE.FindStringSubmatch(lines.Text()); m != nil {
			go func() {
				for lines.Scan() { // keep the pipe drained
				}
			}()
			return "127.0.0.1:" + m[1]
		}
		said = append(said, lines.Text())
	}
	t.Fatalf("kubectl port-forward %s ended without forwarding:\n%s", target, strings.Join(said, "\n"))
	return ""
}

// rbacDenials returns the lines of every container log in ns where the API
// server refused a request for want of RBAC ("… is forbidden: User …"):
// the chart's roles must grant what its components do.
func rbacDenials(ctx context.Context, t *testing.T, c kubernetes.Interface, ns string) []string {
	pods, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range pods.Items {
		for _, ctr := range p.Spec.Containers {
			logs, err := tool(ctx, t, "kubectl", "-n", ns, "logs", p.Name, "-c", ctr.Name)
			if err != nil {
				t.Errorf("logs of %s/%s: %v", p.Name, ctr.Name, err)
				continue
			}
			for _, line := range strings.Split(logs, "\n") {
				if strings.Contains(line, "is forbidden: User") {
					out = append(out, p.Name+"/"+ctr.Name+": "+firstLines(line, 1))
				}
			}
		}
	}
	return out
}
