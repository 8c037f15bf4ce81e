package e2echart

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// tiltBuilds are the images the Tiltfile builds (custom_build with the
// project's builder), as the component each one runs in.
var tiltBuilds = []string{"operator", "results-api", "matcher", "notifier"}

// tiltSelectors find what Tilt deployed (it labels every object it
// applies) and what the chart labels.
var tiltSelectors = append([]string{"app.kubernetes.io/managed-by=tilt"}, chartSelectors...)

// TestTiltCI runs the repository's Tiltfile with `tilt ci` (Tilt's
// non-interactive mode) on this cluster, as a developer does after
// sourcing the stack's dev.env (stack.DevEnv): Tilt builds the images with
// hack/tools/imagebuild, pushes them to the stack's registry, deploys the
// chart with deploy/dev/values.yaml plus the values the stack wrote for
// this machine, waits for every resource to be healthy and must exit 0.
// Every Deployment and StatefulSet must then be Ready with Tilt's builds
// (in the stack's registry, tagged by Tilt, not the images the chart
// suite installs), and `tilt down` must leave nothing behind.
//
// It runs after TestChartOnTheRealNode has uninstalled its release and
// removed the CRDs (tests of a package run one after the other, in file
// order): the Tiltfile deploys the same release into the same namespace,
// and the CRDs and cluster roles are cluster-wide, so the two cannot share
// the cluster at once. It checks that first.
func TestTiltCI(t *testing.T) {
	root := cluster.Options.Root
	tilt := filepath.Join(root, "bin", "tilt")
	if _, err := os.Stat(tilt); err != nil {
		t.Fatalf("the pinned Tilt is missing (make e2e-chart builds it: hack/tools.sh tilt): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	c := cluster.Cluster.Client
	kinds := listableKinds(ctx, t)
	if left := leftovers(ctx, t, kinds, tiltSelectors); len(left) > 0 {
		t.Fatalf("the cluster still holds a Crowsnest install (%d objects), which tilt ci would collide with:\n%s", len(left), strings.Join(left, "\n"))
	}

	start := time.Now()
	if out, err := runTilt(ctx, t, "ci", "--timeout=12m"); err != nil {
		t.Fatalf("tilt ci: %v\n%s\n%s\nlogs:\n%s", err, lastLines(out, 60), describePods(ctx, c, namespace), logsOf(ctx, t, c, namespace))
	} else {
		t.Logf("tilt ci exited 0 in %s:\n%s", time.Since(start).Round(time.Second), lastLines(out, 4))
	}
	t.Logf("timings: tilt ci %s", time.Since(start).Round(time.Second))

	// Tilt said healthy: every workload is Ready now, at once.
	n, err := waitWorkloadsReady(ctx, c, namespace, 30*time.Second)
	if err != nil {
		t.Fatalf("after tilt ci: %v", err)
	}
	checkTiltImages(ctx, t, c)
	t.Logf("all %d Deployments/StatefulSets Ready with Tilt's builds from %s", n, cluster.ImageRegistry())

	down := time.Now()
	if out, err := runTilt(ctx, t, "down", "--delete-namespaces"); err != nil {
		t.Fatalf("tilt down: %v\n%s", err, lastLines(out, 30))
	}
	// Namespaces terminate, and the garbage collector deletes what their
	// owners held, after tilt down returns.
	var left []string
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(2 * time.Second) {
		left = leftovers(ctx, t, kinds, tiltSelectors)
		for _, ns := range []string{namespace, scanned} {
			if _, err := c.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err == nil {
				left = append(left, "namespace/"+ns)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(left) > 0 {
		t.Fatalf("tilt down --delete-namespaces left %d objects:\n%s", len(left), strings.Join(left, "\n"))
	}
	t.Logf("tilt down --delete-namespaces left nothing (%s)", time.Since(down).Round(time.Second))
}

// runTilt runs bin/tilt with args and the Tiltfile in the repository, in
// the environment the stack's dev.env exports, with bin/ first on PATH
// (kubectl, helm, imagebuild), tilt ci's HTTP server off (no fixed port) and
// its own state in the stack's state dir; it returns the combined output,
// also written to <state>/tilt-<subcommand>.log.
func runTilt(ctx context.Context, t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := cluster.Options.Root
	args = append(args, "-f", filepath.Join(root, "Tiltfile"))
	if args[0] == "ci" {
		args = append(args, "--port=0")
	}
	cmd := exec.CommandContext(ctx, filepath.Join(root, "bin", "tilt"), args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), cluster.DevEnv()...)
	cmd.Env = append(cmd.Env, "PATH="+filepath.Join(root, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"),
		"TILT_DEV_DIR="+filepath.Join(cluster.Options.StateDir, "tilt-dev"), "CI=true")
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	logFile := filepath.Join(cluster.Options.StateDir, "tilt-"+args[0]+".log")
	if werr := os.WriteFile(logFile, out, 0o600); werr != nil {
		t.Logf("keep the tilt log: %v", werr)
	}
	if err != nil {
		return string(out), fmt.Errorf("bin/tilt %s (log %s): %w", strings.Join(args, " "), logFile, err)
	}
	return string(out), nil
}

// checkTiltImages asserts that each component Tilt builds runs Tilt's
// build: pushed to the stack's registry under Tilt's own tag, not the
// image the chart suite installs (stack.Images), and that the operator
// hands scan Jobs Tilt's uploader (match_in_env_vars).
func checkTiltImages(ctx context.Context, t *testing.T, c kubernetes.Interface) {
	t.Helper()
	deps, err := c.AppsV1().Deployments(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sts, err := c.AppsV1().StatefulSets(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	specs := map[string]corev1.PodSpec{}
	for _, d := range deps.Items {
		specs[d.Name] = d.Spec.Template.Spec
	}
	for _, s := range sts.Items {
		specs[s.Name] = s.Spec.Template.Spec
	}
	for _, name := range tiltBuilds {
		spec, ok := specs[release+"-"+name]
		if !ok {
			t.Errorf("no Deployment or StatefulSet %s-%s (have %v)", release, name, keys(specs))
			continue
		}
		image := spec.Containers[0].Image
		checkTiltRef(t, name, image)
		if name == "operator" {
			checkTiltRef(t, "uploader", envOf(spec.Containers[0], "CROWSNEST_UPLOADER_IMAGE"))
		}
		t.Logf("%s runs %s", name, image)
	}
	// NATS is not built by Tilt: the stack's image, through the values.
	if nats, ok := specs[release+"-nats"]; !ok || nats.Containers[0].Image != cluster.Images["nats"] {
		t.Errorf("NATS: want %s from the stack's registry, have %v", cluster.Images["nats"], specs[release+"-nats"].Containers)
	}
}

// checkTiltRef: ref is <the stack's registry>/crowsnest-<name>:tilt-<hash>.
func checkTiltRef(t *testing.T, name, ref string) {
	t.Helper()
	want := cluster.ImageRegistry() + "/crowsnest-" + name + ":tilt-"
	if !strings.HasPrefix(ref, want) || ref == cluster.Images[name] {
		t.Errorf("%s runs %q: want Tilt's build %s<hash> (the suite's image is %s)", name, ref, want, cluster.Images[name])
	}
}

func envOf(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
