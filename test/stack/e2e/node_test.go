package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
	"github.com/crowsnest-dev/crowsnest/test/stack"
	"github.com/crowsnest-dev/crowsnest/test/stack/internal/workload"
)

// TestScanPodKilledOnTheRealNode holds a scan on the registry (Grype's pull
// of the scanned image waits), shows the held scan Pod's logs and runs a
// command in it through the API server and the kubelet (kubectl logs and
// exec, as the demo does), then SIGKILLs its Grype container through
// containerd. The Pod fails, the operator retries after its backoff, and
// the digest is scanned exactly once in the end: one report, one
// report.stored, and each Job's job.done once — the first failed, the last
// succeeded.
func TestScanPodKilledOnTheRealNode(t *testing.T) {
	needFull(t)
	ctx := withTimeout(t, 5*time.Minute)
	ns := "e2e-node"
	natsRec := subscribeNATS(t, shared.NATS.URL())
	jobs := watchJobs(t, ns)
	if err := workload.EnsureNamespace(ctx, shared.Client, ns); err != nil {
		t.Fatal(err)
	}
	img := pushVariant(ctx, t, "node-killed")
	release := shared.Registry.Hold(img.Digest)
	defer release()
	if err := shared.Client.Create(ctx, workload.Scanner(ns, 1, 0)); err != nil {
		t.Fatal(err)
	}
	if err := shared.Client.Create(ctx, workload.Pod(ns, "victim", img.Ref(), false)); err != nil {
		t.Fatal(err)
	}
	pod := heldScanPod(ctx, t, ns, img.Digest)
	if pod.Spec.NodeName != stack.NodeName {
		t.Fatalf("scan Pod %s runs on %q, want the real node %s", pod.Name, pod.Spec.NodeName, stack.NodeName)
	}

	// kubectl logs and exec reach the kubelet through the API server.
	logs := kubectl(ctx, t, "logs", "-n", ns, pod.Name, "-c", "grype")
	t.Logf("kubectl logs (%d bytes)", len(logs))
	version := kubectl(ctx, t, "exec", "-n", ns, pod.Name, "-c", "grype", "--", "/grype", "version")
	if !strings.Contains(version, "Version:") {
		t.Errorf("kubectl exec grype version printed %q", version)
	}

	id := ""
	for _, s := range pod.Status.InitContainerStatuses {
		if s.Name == "grype" {
			id = s.ContainerID
		}
	}
	if id == "" {
		t.Fatalf("no container id for grype in %+v", pod.Status.InitContainerStatuses)
	}
	if err := shared.Node.KillContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the killed scan's job.done", func() error {
		es := natsRec.of(img.Digest)
		if i := index(es, "job.done"); i < 0 || es[i].Outcome != "failed" {
			return fmt.Errorf("events so far: %s", kinds(es))
		}
		return nil
	})
	release() // the retry pulls the image at once
	eventually(t, 2*time.Minute, "the retry stored the report, every event once", func() error {
		if _, err := getReport(ctx, img.Digest); err != nil {
			return err
		}
		es := natsRec.of(img.Digest)
		n := len(jobs.snapshot()[img.Digest])
		if n != 2 {
			return fmt.Errorf("%d scan Jobs, want the killed one and its retry", n)
		}
		return checkEveryJobDoneOnce(es, n)
	})
	es := natsRec.of(img.Digest)
	t.Logf("events: %s", kinds(es))
	if first := es[index(es, "job.done")]; first.Reason == "" {
		t.Errorf("the killed scan's job.done has no failure reason")
	}
}

// TestScannerImagePullFailsOnTheRealNode gives a Scanner a Grype image the
// registry does not have: the real kubelet reports ErrImagePull /
// ImagePullBackOff for the scan Pod, and the operator ends the scan as
// failed with reason ScannerImagePull (after --stuck-grace), as before
// with the stand-in.
func TestScannerImagePullFailsOnTheRealNode(t *testing.T) {
	needFull(t)
	ctx := withTimeout(t, 4*time.Minute)
	ns := "e2e-node-pull"
	natsRec := subscribeNATS(t, shared.NATS.URL())
	if err := workload.EnsureNamespace(ctx, shared.Client, ns); err != nil {
		t.Fatal(err)
	}
	s := workload.Scanner(ns, 1, 0)
	s.Spec.GrypeImage = shared.Registry.Host + "/crowsnest/crowsnest-grype:does-not-exist"
	if err := shared.Client.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	img := pushVariant(ctx, t, "node-pull")
	if err := shared.Client.Create(ctx, workload.Pod(ns, "app", img.Ref(), false)); err != nil {
		t.Fatal(err)
	}
	sawPullError := false
	eventually(t, 3*time.Minute, "job.done failed with ScannerImagePull", func() error {
		if !sawPullError {
			sawPullError = podWaiting(ctx, ns, "ErrImagePull", "ImagePullBackOff")
		}
		es := natsRec.of(img.Digest)
		i := index(es, "job.done")
		if i < 0 {
			return fmt.Errorf("events so far: %s", kinds(es))
		}
		if es[i].Outcome != "failed" || es[i].Reason != crowsnestv1alpha1.FailureScannerImagePull {
			return fmt.Errorf("job.done %s/%s, want failed/%s", es[i].Outcome, es[i].Reason, crowsnestv1alpha1.FailureScannerImagePull)
		}
		return nil
	})
	if !sawPullError {
		t.Error("never saw the kubelet's ErrImagePull or ImagePullBackOff on the scan Pod")
	}
}

// podWaiting tells whether a scan Pod in ns has a container waiting for
// one of reasons.
func podWaiting(ctx context.Context, ns string, reasons ...string) bool {
	pods, err := shared.Cluster.Client.CoreV1().Pods(ns).List(ctx, listScanPods)
	if err != nil {
		return false
	}
	for _, p := range pods.Items {
		for _, s := range append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
			if s.State.Waiting != nil {
				for _, r := range reasons {
					if s.State.Waiting.Reason == r {
						return true
					}
				}
			}
		}
	}
	return false
}

var listScanPods = metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=crowsnest-scan"}

// kubectl runs the stack's kubectl and returns its output.
func kubectl(ctx context.Context, t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, filepath.Join(shared.Options.Root, "bin", "kubectl"), append([]string{"--kubeconfig", shared.Cluster.Kubeconfig}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
