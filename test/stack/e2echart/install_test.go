package e2echart

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/crowsnest-dev/crowsnest/test/stack"
)

const (
	release   = "crowsnest"
	namespace = "crowsnest-system"
	scanned   = "demo" // the README's global.scan.namespaces
)

// TestChartOnTheRealNode installs the chart with the README's values plus
// only what this machine needs (its registry, its Postgres, its Grype DB
// mirror, plain HTTP to both), waits for every Deployment and StatefulSet
// to be Ready on the real node (the chart's probes, security contexts and
// read-only root filesystems, for real), deploys two workloads in the
// scanned namespace (the pause image, no packages; an Alpine image with
// findings) and waits until the scan Jobs the operator creates have stored
// their reports through the results-api Service, read back through a
// port-forward to that Service with a reader's token. Then, on the same
// install: the dashboard in Chromium and kubectl crowsnest read it
// (clients_test.go), a newer DB re-matches the reports and the notifier tells once
// (rematch_test.go), helm upgrade with changed values loses no report and
// repeats no scan (upgrade_test.go), deleted Pods recover losing nothing
// (recover_test.go), helm test, helm uninstall.
func TestChartOnTheRealNode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	c := cluster.Cluster.Client
	for _, ns := range []string{namespace, scanned} {
		if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The chart's external-database path: a Secret with the URL.
	if _, err := c.CoreV1().Secrets(namespace).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "crowsnest-database"},
		StringData: map[string]string{"url": cluster.Postgres.PodURL},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	registryHost := cluster.Registry.Host
	apiServerPorts, scanEgressPorts, err := cluster.NetworkPolicyPorts()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"install", release, filepath.Join(cluster.Options.Root, "helm", "crowsnest"), "-n", namespace,
		// The README's values.
		"--set", "global.scan.namespaces={" + scanned + "}", "--set", "defaultScanner.enabled=true",
		// This machine: its registry (plain HTTP, for Grype's pulls too),
		// its Postgres, its Grype DB mirror (no internet here), which
		// publishes a newer DB during the test (checked every 10s).
		"--set", "global.imageRegistry=" + cluster.ImageRegistry(),
		"--set", "operator.extraArgs={--insecure-registries=" + registryHost + "}",
		"--set", "postgres.enabled=false", "--set", "global.database.existingSecret.name=crowsnest-database",
		"--set", "matcher.upstreamURL=" + cluster.DBMirrorURL, "--set", "matcher.extraArgs={--allow-insecure-upstream}",
		"--set", "matcher.checkInterval=10s",
		// The enforced NetworkPolicies (netpol_test.go): scan Pods pull from
		// the registry's port, the components reach kube-apiserver on its
		// port (policies judge the port after the Service's translation).
		"--set", "global.networkPolicy.scanEgressPorts={" + joinInts(scanEgressPorts) + "}",
		"--set", "global.networkPolicy.apiServerPorts={" + joinInts(apiServerPorts) + "}",
	}
	start := time.Now()
	if out, err := tool(ctx, t, "helm", args...); err != nil {
		t.Fatal(err)
	} else {
		t.Logf("helm install:\n%s", firstLines(out, 6))
	}
	installed := time.Since(start)
	n, err := waitWorkloadsReady(ctx, c, namespace, 6*time.Minute)
	if err != nil {
		t.Fatalf("%v\nlogs:\n%s", err, logsOf(ctx, t, c, namespace))
	}
	ready := time.Since(start)
	t.Logf("helm install returned in %s; all %d Deployments/StatefulSets Ready %s after it started", installed.Round(time.Millisecond), n, ready.Round(time.Millisecond))

	alpine, err := cluster.PushRunnableAlpine(ctx, "findings")
	if err != nil {
		t.Fatal(err)
	}
	w := &workloads{pause: deployWorkload(ctx, t, c, scanned, "web", cluster.PauseImage()),
		alpine: deployWorkload(ctx, t, c, scanned, "app", alpine.Ref())}
	reader := readerToken(ctx, t, c)
	api := "http://" + portForward(ctx, t, namespace, "svc/"+release+"-results-api:80")
	for _, digest := range []string{w.pause, w.alpine} {
		report, err := waitReport(ctx, api, reader, digest, 5*time.Minute)
		if err != nil {
			t.Fatalf("%v\n%s\n%s", err, describePods(ctx, c, scanned), logsOf(ctx, t, c, namespace))
		}
		t.Logf("report of %s stored through the results-api Service: %s", digest, firstLines(report, 1))
	}
	stored := time.Since(start)
	t.Logf("timings: helm install → all Ready %s, → both first reports stored %s", ready.Round(time.Second), stored.Round(time.Second))
	scanJobRanOnTheNode(ctx, t, c)

	// Every scan Job created from here on, in any namespace.
	jobs := watchJobs(ctx, t, c)
	w.reader, w.jobs = reader, jobs
	steps := []struct {
		name   string
		run    func(context.Context, *testing.T, kubernetes.Interface, *workloads)
		memory bool // log each Pod's memory after it
	}{
		{"network policies", networkPolicies, false},
		{"dashboard and kubectl crowsnest", dashboardAndPlugin, false},
		{"rematch and notify", rematchAndNotify, true}, // the scans and a re-match done
		{"upgrade with changed values", upgradeWithChangedValues, false},
		{"delete results-api and matcher Pods", deletePods, true},
	}
	for _, step := range steps {
		stepStart := time.Now()
		if !t.Run(step.name, func(t *testing.T) { step.run(ctx, t, c, w) }) {
			t.Logf("%s failed after %s: %s", step.name, time.Since(stepStart).Round(time.Second), logsOf(ctx, t, c, namespace))
			break
		}
		t.Logf("timings: %s took %s", step.name, time.Since(stepStart).Round(time.Second))
		if step.memory {
			podMemory(ctx, t, c)
		}
	}
	if denied := rbacDenials(ctx, t, c, namespace); len(denied) > 0 {
		t.Errorf("the API server refused %d requests of the chart's components (RBAC):\n%s", len(denied), strings.Join(denied, "\n"))
	}
	helmTest(ctx, t)
	if left := uninstall(ctx, t); len(left) > 0 {
		t.Errorf("helm uninstall and the CRDs' removal left %d Crowsnest objects:\n%s", len(left), strings.Join(left, "\n"))
	} else {
		t.Log("helm uninstall and the CRDs' removal left no Crowsnest object")
	}
}

// workloads is what the steps after the install share: the digests the
// first workloads run, a reader's token, the count of scan Jobs created.
type workloads struct {
	pause, alpine string
	reader        string
	jobs          *jobCounter
}

// deployWorkload runs a Deployment of image in ns and returns the digest
// its Pod runs, as the kubelet reports it.
func deployWorkload(ctx context.Context, t *testing.T, c kubernetes.Interface, ns, name, image string) string {
	t.Helper()
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
					Containers: []corev1.Container{{Name: name, Image: image,
						SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
							Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}}},
				},
			},
		},
	}
	if _, err := c.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		pods, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			for _, cs := range p.Status.ContainerStatuses {
				if _, digest, ok := strings.Cut(cs.ImageID, "@"); ok && cs.Ready {
					return digest
				}
			}
		}
		time.Sleep(time.Second)
	}
	t.Fatalf("the workload %s/%s did not run in 2m:\n%s", ns, name, describePods(ctx, c, ns))
	return ""
}

// readerToken makes a ServiceAccount bound cluster-wide to the chart's
// view role and returns a token for results-api's audience.
func readerToken(ctx context.Context, t *testing.T, c kubernetes.Interface) string {
	t.Helper()
	if _, err := c.CoreV1().ServiceAccounts(namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "e2e-reader"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: release + "-view"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "e2e-reader", Namespace: namespace}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := c.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, "e2e-reader", &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{Audiences: []string{stack.TokenAudience}, ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// waitReport polls GET /api/v1/reports/{digest} until it answers 200.
func waitReport(ctx context.Context, api, token, digest string, timeout time.Duration) (string, error) {
	deadline := time.Now().Add(timeout)
	last := ""
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, api+"/api/v1/reports/"+digest, nil)
		if err != nil {
			return "", err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return summarize(body), nil
			}
			last = fmt.Sprintf("%s: %s", resp.Status, firstLines(string(body), 2))
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("no report of %s after %s (last answer %s)", digest, timeout, last)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}

func summarize(body []byte) string {
	var r map[string]any
	if err := json.Unmarshal(body, &r); err != nil {
		return firstLines(string(body), 1)
	}
	delete(r, "findings")
	b, _ := json.Marshal(r)
	return string(b)
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}
