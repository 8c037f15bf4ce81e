package charttest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const apiHost = "crowsnest-results-api." + releaseNS + ".svc"

// TestResultsAPITLS: with global.resultsApi.tls results-api mounts the
// Secret and serves HTTPS with it, its probes and Service follow, and the
// operator calls it, and hands scan Jobs, an https URL while trusting the
// Secret's ca.crt. With cert-manager the Certificate writes that same
// Secret and names the host in that URL.
func TestResultsAPITLS(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, tt := range []struct {
		name, secret string
		args         []string
	}{
		{"named Secret", "crowsnest-api-tls", apiTLSNamed},
		{"cert-manager", "crowsnest-results-api-tls", apiTLSCertManager},
	} {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := Template(ctx, repoRoot, releaseNS, withScan(append(slices.Clone(tt.args),
				"--set", "monitoring.enabled=true", "--api-versions", "monitoring.coreos.com/v1")...)...)
			if err != nil {
				t.Fatal(err)
			}
			pods := podsByObject(t, objs)
			checkAPIServesTLS(t, pods["Deployment/crowsnest-results-api"], tt.secret)
			checkOperatorTrustsAPI(t, pods["Deployment/crowsnest-operator"], tt.secret)
			checkAPIService(t, objs)
			cert := find(objs, "Certificate/crowsnest-results-api")
			if tt.name == "named Secret" {
				if cert != nil {
					t.Error("a Certificate rendered for a Secret the user names")
				}
				return
			}
			if cert == nil {
				t.Fatal("no Certificate rendered")
			}
			secret, _, _ := unstructured.NestedString(cert.Object, "spec", "secretName")
			names, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
			issuer, _, _ := unstructured.NestedStringMap(cert.Object, "spec", "issuerRef")
			if secret != tt.secret || !slices.Contains(names, apiHost) ||
				issuer["name"] != "crowsnest-ca" || issuer["kind"] != "ClusterIssuer" || issuer["group"] != "cert-manager.io" {
				t.Errorf("Certificate secretName %q dnsNames %q issuerRef %v, want %s naming %s from ClusterIssuer crowsnest-ca",
					secret, names, issuer, tt.secret, apiHost)
			}
		})
	}
}

func checkAPIServesTLS(t *testing.T, p PodTemplate, secret string) {
	t.Helper()
	c := p.Spec.Containers[0]
	for _, a := range []string{"--tls-cert-file=/var/run/secrets/crowsnest/tls/tls.crt", "--tls-key-file=/var/run/secrets/crowsnest/tls/tls.key"} {
		if !slices.Contains(c.Args, a) {
			t.Errorf("results-api args %q lack %s", c.Args, a)
		}
	}
	v := volume(t, p, "tls")
	if v.Secret == nil || v.Secret.SecretName != secret ||
		!slices.Equal(v.Secret.Items, []corev1.KeyToPath{{Key: "tls.crt", Path: "tls.crt"}, {Key: "tls.key", Path: "tls.key"}}) {
		t.Errorf("results-api tls volume = %+v, want tls.crt and tls.key of Secret %s", v.VolumeSource, secret)
	}
	if !slices.Contains(c.VolumeMounts, corev1.VolumeMount{Name: "tls", MountPath: "/var/run/secrets/crowsnest/tls", ReadOnly: true}) {
		t.Errorf("results-api mounts %+v, want tls read-only at /var/run/secrets/crowsnest/tls", c.VolumeMounts)
	}
	// The API on https; /metrics alone on its own port (--metrics-listen).
	if len(c.Ports) != 2 || c.Ports[0].Name != "https" || c.Ports[0].ContainerPort != 8080 || c.Ports[1].Name != "metrics" {
		t.Errorf("results-api ports %+v, want https 8080 and metrics", c.Ports)
	}
	for name, probe := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		if g := probe.HTTPGet; g == nil || g.Scheme != corev1.URISchemeHTTPS || g.Port.StrVal != "https" {
			t.Errorf("results-api %s probe %+v, want HTTPS on port https", name, probe.ProbeHandler)
		}
	}
}

func checkOperatorTrustsAPI(t *testing.T, p PodTemplate, secret string) {
	t.Helper()
	env := map[string]string{}
	for _, e := range p.Spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	for _, name := range []string{"CROWSNEST_RESULTS_API_URL", "CROWSNEST_UPLOADER_API_URL"} {
		if env[name] != "https://"+apiHost {
			t.Errorf("operator %s = %q, want https://%s", name, env[name], apiHost)
		}
	}
	if !slices.Contains(strings.Split(env["SSL_CERT_DIR"], ":"), "/var/run/secrets/crowsnest/results-api-ca") {
		t.Errorf("operator SSL_CERT_DIR = %q, want the results-api CA folder", env["SSL_CERT_DIR"])
	}
	v := volume(t, p, "results-api-ca")
	if v.Secret == nil || v.Secret.SecretName != secret || v.Secret.Optional != nil ||
		!slices.Equal(v.Secret.Items, []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}) {
		t.Errorf("operator results-api-ca volume = %+v, want ca.crt of Secret %s, not optional", v.VolumeSource, secret)
	}
}

func checkAPIService(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	svc := find(objs, "Service/crowsnest-results-api")
	if svc == nil {
		t.Fatal("no results-api Service")
	}
	var s corev1.Service
	if err := fromUnstructured(svc, &s); err != nil {
		t.Fatal(err)
	}
	if p := s.Spec.Ports; len(p) != 2 || p[0].Name != "https" || p[0].Port != 443 || p[0].TargetPort.StrVal != "https" || p[1].Name != "metrics" {
		t.Errorf("results-api Service ports %+v, want https 443 to https, and metrics", p)
	}
	sm := find(objs, "ServiceMonitor/crowsnest-results-api")
	if sm == nil {
		t.Fatal("no results-api ServiceMonitor")
	}
	// Prometheus scrapes the metrics port, never the API port the Ingress
	// routes to.
	eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if ep := eps[0].(map[string]any); len(eps) != 1 || ep["port"] != "metrics" {
		t.Errorf("results-api ServiceMonitor endpoints %v, want the metrics port", eps)
	}
	// ... over HTTPS with Prometheus's token (readAuth kubernetes: only
	// tokens allowed get /metrics), verifying the Secret's CA.
	ep := eps[0].(map[string]any)
	ca, _, _ := unstructured.NestedString(ep, "tlsConfig", "ca", "secret", "key")
	if ep["scheme"] != "https" || ep["bearerTokenFile"] != "/var/run/secrets/kubernetes.io/serviceaccount/token" || ca != "ca.crt" {
		t.Errorf("results-api ServiceMonitor endpoint %v, want https with the bearer token file and the Secret's ca.crt", ep)
	}
}

// TestResultsAPITLSNotes: NOTES.txt port-forwards the HTTPS port.
func TestResultsAPITLSNotes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	args := append([]string{"install", "crowsnest", ChartDir, "--namespace", releaseNS, "--kubeconfig", writeKubeconfig(t), "--dry-run=client"},
		withScan(apiTLSNamed...)...)
	out, err := RunHelm(ctx, repoRoot, args...)
	if err != nil {
		t.Fatal(err)
	}
	_, notes, _ := strings.Cut(string(out), "\nNOTES:\n")
	if !strings.Contains(notes, "port-forward svc/crowsnest-results-api 8443:443") || !strings.Contains(notes, "https://127.0.0.1:8443/") {
		t.Errorf("NOTES do not port-forward HTTPS:\n%s", notes)
	}
}

// TestSSLCertDirTrustsMountedCA plays the operator's side of results-api
// TLS with real parts: a Go process given SSL_CERT_DIR as the chart sets it,
// pointing at a folder laid out as kubelet mounts a Secret (ca.crt a link
// into a timestamped folder through ..data), trusts a server whose
// certificate that CA signed, for the name in the operator's URL. Without
// SSL_CERT_DIR the same request fails.
func TestSSLCertDirTrustsMountedCA(t *testing.T) {
	caPEM, serverCert := issue(t, "localhost")
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{serverCert}, MinVersion: tls.VersionTLS12}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake below is expected
	srv.StartTLS()
	defer srv.Close()
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	target := "https://localhost:" + u.Port() + "/"

	// kubelet's layout of a Secret volume with one item.
	dir := t.TempDir()
	stamp := filepath.Join(dir, "..2025_01_01_00_00_00.000000001")
	if err := os.Mkdir(stamp, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stamp, "ca.crt"), caPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Base(stamp), filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("..data/ca.crt", filepath.Join(dir, "ca.crt")); err != nil {
		t.Fatal(err)
	}

	// get runs the helper process with env and returns what it printed and
	// whether the GET succeeded.
	get := func(env ...string) (string, bool) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHTTPSGet$")
		cmd.Env = append(os.Environ(), append(env, "CHARTTEST_HTTPS_GET="+target)...)
		out, err := cmd.CombinedOutput()
		return string(out), err == nil && strings.Contains(string(out), "GOT ok")
	}
	if out, ok := get("SSL_CERT_DIR=" + dir + ":/etc/ssl/certs"); !ok {
		t.Errorf("with SSL_CERT_DIR on the mounted CA the GET failed:\n%s", out)
	}
	if out, ok := get("SSL_CERT_DIR=" + t.TempDir()); ok {
		t.Errorf("without the CA the GET succeeded, so the check proves nothing:\n%s", out)
	}
}

// TestHelperHTTPSGet is the process TestSSLCertDirTrustsMountedCA starts:
// a GET with Go's default client (system roots, as the operator's), the
// address in CHARTTEST_HTTPS_GET. It does nothing in a normal run.
func TestHelperHTTPSGet(t *testing.T) {
	target := os.Getenv("CHARTTEST_HTTPS_GET")
	if target == "" {
		t.Skip("helper process only")
	}
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(target)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b := make([]byte, 2)
	_, _ = resp.Body.Read(b)
	os.Stdout.WriteString("GOT " + string(b) + "\n")
}

// issue makes a CA and a server certificate it signs for host and
// 127.0.0.1; it returns the CA in PEM and the server's key pair.
func issue(t *testing.T, host string) ([]byte, tls.Certificate) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: host},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), DNSNames: []string{host},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
