package charttest

import (
	"bytes"
	"context"
	"encoding/base64"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/conf"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// writeKubeconfig writes a kubeconfig for the test API server, for helm.
func writeKubeconfig(t *testing.T) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["envtest"] = &clientcmdapi.Cluster{Server: apiCfg.Host, CertificateAuthorityData: apiCfg.CAData}
	cfg.AuthInfos["envtest"] = &clientcmdapi.AuthInfo{ClientCertificateData: apiCfg.CertData, ClientKeyData: apiCfg.KeyData, Token: apiCfg.BearerToken}
	cfg.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "envtest"}
	cfg.CurrentContext = "envtest"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestInstallKeepsGeneratedSecrets runs `helm install --dry-run=server`
// against the real API server, where the release's Secrets already exist (as
// on an upgrade): lookup must keep the Postgres password and the write token
// instead of generating new ones. It also checks NOTES.txt and that the
// helm test Pod is the release's only hook.
func TestInstallKeepsGeneratedSecrets(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, err := kubernetes.NewForConfig(apiCfg)
	if err != nil {
		t.Fatal(err)
	}
	const ns = "upgrade-test"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]map[string][]byte{
		"crowsnest-postgres":                {"password": []byte("kept-password")},
		"crowsnest-results-api-write-token": {"token": []byte("kept-token")},
		// From an older chart without the matcher and notifier users.
		"crowsnest-nats-users": {"operator": []byte("keptOperatorPassword"), "results-api": []byte("keptResultsApiPassword"), "reader": []byte("keptReaderPassword")},
	} {
		// Owned by the release, as after a previous install (or an uninstall
		// that kept the Postgres Secret).
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
			Labels:      map[string]string{"app.kubernetes.io/managed-by": "Helm"},
			Annotations: map[string]string{"meta.helm.sh/release-name": "crowsnest", "meta.helm.sh/release-namespace": ns},
		}, Data: data}
		if _, err := cs.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	out, err := RunHelm(ctx, repoRoot, "install", "crowsnest", ChartDir, "--namespace", ns, "--kubeconfig", writeKubeconfig(t),
		"--dry-run=server", "--set", "defaultScanner.enabled=true", "--set", "global.scan.namespaces={team-a}")
	if err != nil {
		t.Fatal(err)
	}
	manifest, notes, ok := bytes.Cut(out, []byte("\nNOTES:\n"))
	if !ok {
		t.Fatalf("no NOTES in helm output:\n%s", out)
	}
	head, manifest, _ := bytes.Cut(manifest, []byte("\nMANIFEST:\n"))
	objs, err := Decode(manifest)
	if err != nil {
		t.Fatal(err)
	}
	// The helm test Pod is a hook, kept out of the release's manifest.
	_, hookYAML, _ := bytes.Cut(head, []byte("\nHOOKS:\n"))
	hooks, err := Decode(hookYAML)
	if err != nil {
		t.Fatal(err)
	}
	if len(hooks) != 1 || hooks[0].GetKind() != "Pod" || hooks[0].GetName() != "crowsnest-test" || hooks[0].GetAnnotations()["helm.sh/hook"] != "test" {
		t.Errorf("hooks %v, want only the helm test Pod crowsnest-test", hooks)
	}
	if find(objs, "Pod/crowsnest-test") != nil || find(objs, "NetworkPolicy/crowsnest-test") == nil {
		t.Error("the manifest holds the test Pod, or lacks its NetworkPolicy")
	}
	want := map[string]map[string]string{
		"crowsnest-postgres":                {"password": "kept-password"},
		"crowsnest-results-api-write-token": {"token": "kept-token"},
		"crowsnest-nats-users":              {"operator": "keptOperatorPassword", "results-api": "keptResultsApiPassword", "reader": "keptReaderPassword"},
	}
	checkKeptNATSPasswords(t, objs)
	for _, o := range objs {
		keys, ok := want[o.GetName()]
		if o.GetKind() != "Secret" || !ok {
			continue
		}
		delete(want, o.GetName())
		for k, v := range keys {
			if got := secretValue(t, o, k); got != v {
				t.Errorf("Secret %s key %s = %q, want the existing %q", o.GetName(), k, got, v)
			}
		}
		if o.GetName() == "crowsnest-postgres" {
			if url := secretValue(t, o, "url"); !strings.Contains(url, ":kept-password@crowsnest-postgres."+ns+".svc:5432/crowsnest") {
				t.Errorf("url %q does not use the kept password", url)
			}
		}
	}
	if len(want) > 0 {
		t.Errorf("Secrets not rendered: %v", want)
	}
	for _, w := range []string{"port-forward svc/crowsnest-results-api 8080:80", "helm test crowsnest -n " + ns + " --logs", "kind: Scanner", `Scanner "default" in: team-a`, "crowsnest-results-api-write-token",
		"--user reader", "get secret crowsnest-nats-users", "ServiceAccount crowsnest-scan",
		"kubectl create clusterrolebinding crowsnest-admin-ci --clusterrole=crowsnest-admin --serviceaccount=ci:uploader",
		"kubectl -n ci create token uploader --audience crowsnest-results-api", "ClusterRole crowsnest-view",
		"The operator watches only team-a (--watch-namespaces),\nwith a Role in each",
		"only to bearer tokens allowed by\nClusterRole crowsnest-metrics-reader",
		"kubectl create clusterrolebinding crowsnest-metrics-reader-prometheus --clusterrole=crowsnest-metrics-reader --serviceaccount=monitoring:prometheus-k8s"} {
		if !strings.Contains(string(notes), w) {
			t.Errorf("NOTES lack %q:\n%s", w, notes)
		}
	}
	if strings.Contains(string(notes), "cannot upload") {
		t.Errorf("NOTES say scan Jobs cannot upload, with a scan namespace listed:\n%s", notes)
	}
}

// TestNotesWithoutScanNamespaces: without scan namespaces only the admin
// token writes, and NOTES.txt says so instead of offering Kubernetes tokens.
func TestNotesWithoutScanNamespaces(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"--set", "operator.clusterWide=true"}, []string{
			"No scan namespaces are configured (global.scan.namespaces): results-api\naccepts only the admin token, so scan Jobs cannot upload.",
			"The operator watches every namespace (operator.clusterWide=true): its\nClusterRole may create Jobs"}},
		{[]string{"--set", "global.scan.namespaces={team-a}", "--set", "resultsApi.auth.mode=static",
			"--set", "monitoring.prometheusServiceAccount.namespace=monitoring", "--set", "monitoring.prometheusServiceAccount.name=prometheus"}, []string{
			"resultsApi.auth.mode is static: results-api accepts only the admin token, so\nscan Jobs cannot upload.",
			"The chart binds it to ServiceAccount monitoring/prometheus."}},
	} {
		args := append([]string{"install", "crowsnest", ChartDir, "--namespace", releaseNS, "--kubeconfig", writeKubeconfig(t), "--dry-run=client"}, tt.args...)
		out, err := RunHelm(ctx, repoRoot, args...)
		if err != nil {
			t.Fatal(err)
		}
		_, notes, _ := strings.Cut(string(out), "\nNOTES:\n")
		for _, w := range append(tt.want, "get secret crowsnest-results-api-write-token", "count only in tokenreview\n  mode") {
			if !strings.Contains(notes, w) {
				t.Errorf("%v: NOTES lack %q:\n%s", tt.args, w, notes)
			}
		}
		if strings.Contains(notes, "create token") {
			t.Errorf("%v: NOTES offer Kubernetes tokens in static mode:\n%s", tt.args, notes)
		}
	}
}

func secretValue(t *testing.T, o *unstructured.Unstructured, key string) string {
	t.Helper()
	s, _, _ := unstructured.NestedString(o.Object, "data", key)
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatalf("Secret %s key %s: %v", o.GetName(), key, err)
	}
	return string(b)
}

// checkKeptNATSPasswords: the server's configuration uses the kept
// passwords, and the users the old Secret lacked get new ones.
func checkKeptNATSPasswords(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	users := secretData(t, objs, "crowsnest-nats-users")
	for _, u := range []string{"matcher", "notifier"} {
		if len(users[u]) != 32 {
			t.Errorf("new user %s got password %q, want 32 generated characters", u, users[u])
		}
	}
	parsed, err := conf.Parse(secretData(t, objs, "crowsnest-nats-config")["nats.conf"])
	if err != nil {
		t.Fatal(err)
	}
	for name, entry := range usersOf(t, parsed) {
		if pw := entry.(map[string]any)["password"]; pw != users[name] {
			t.Errorf("nats.conf password of %s = %v, want the users Secret's %q", name, pw, users[name])
		}
	}
}
