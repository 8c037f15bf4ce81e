package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

func noKube() (*rest.Config, error) { return nil, errors.New("no cluster in this test") }

func TestHelpDocumentsEveryFlagAndItsEnv(t *testing.T) {
	var out bytes.Buffer
	err := run(context.Background(), []string{"--help"}, func(string) string { return "" }, io.Discard, &out, noKube)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("err = %v, want flag.ErrHelp", err)
	}
	var o Options
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	o.BindFlags(fs)
	fs.VisitAll(func(f *flag.Flag) {
		if !strings.Contains(out.String(), "-"+f.Name) || !strings.Contains(out.String(), EnvName(f.Name)) {
			t.Errorf("--help does not document -%s and %s", f.Name, EnvName(f.Name))
		}
	})
}

func TestEnvDefaultsAndFlagsWin(t *testing.T) {
	env := map[string]string{
		"CROWSNEST_RESULTS_API_URL": "http://from-env:8080",
		"CROWSNEST_UPLOADER_IMAGE":  "ghcr.io/x/uploader:env",
		"CROWSNEST_RETRY_BACKOFF":   "30s",
	}
	var o Options
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	o.BindFlags(fs)
	if err := applyEnv(fs, func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if err := fs.Parse([]string{"--uploader-image=ghcr.io/x/uploader:flag"}); err != nil {
		t.Fatal(err)
	}
	if o.ResultsAPIURL != "http://from-env:8080" || o.UploaderImage != "ghcr.io/x/uploader:flag" || o.RetryBackoff != 30*time.Second {
		t.Errorf("options = %+v", o)
	}
	if err := o.Validate(); err != nil {
		t.Errorf("valid options rejected: %v", err)
	}
}

func TestInvalidConfigurationIsReported(t *testing.T) {
	var out bytes.Buffer
	err := run(context.Background(), nil, func(string) string { return "" }, io.Discard, &out, noKube)
	if err == nil || !strings.Contains(err.Error(), "--results-api-url is required") || !strings.Contains(err.Error(), "--uploader-image is required") {
		t.Errorf("err = %v", err)
	}
	err = run(context.Background(), nil, func(k string) string {
		return map[string]string{"CROWSNEST_RETRY_BACKOFF": "soon"}[k]
	}, io.Discard, &out, noKube)
	if err == nil || !strings.Contains(err.Error(), "CROWSNEST_RETRY_BACKOFF") {
		t.Errorf("bad env value: err = %v", err)
	}
	err = run(context.Background(), []string{"--results-api-url=http://x", "--uploader-image=u"}, func(string) string { return "" }, io.Discard, &out, noKube)
	if err == nil || !strings.Contains(err.Error(), "no cluster") {
		t.Errorf("kubeconfig error not returned: %v", err)
	}
}

// TestJobTTLIsValidated: a TTL of 0 (delete at once), or one that would
// delete a failed Job before its retry is due, is refused at start-up with
// an error that says what is needed.
func TestJobTTLIsValidated(t *testing.T) {
	for _, tc := range []struct {
		args []string
		ok   bool
	}{
		{nil, true}, // defaults: 2h ≥ 1h + 1m
		{[]string{"--job-ttl=0s"}, false},
		{[]string{"--job-ttl=-1h"}, false},
		{[]string{"--job-ttl=30m"}, false}, // below the default 1h backoff cap
		{[]string{"--job-ttl=1h"}, false},  // not above it by the margin
		{[]string{"--job-ttl=61m"}, true},  // exactly the cap + the margin
		{[]string{"--job-ttl=2m", "--retry-backoff=5s", "--retry-backoff-max=40s"}, true}, // the local stack's e2e settings
		{[]string{"--job-ttl=2m", "--retry-backoff=5s", "--retry-backoff-max=2m"}, false},
		{[]string{"--job-ttl=700000h"}, false}, // over ttlSecondsAfterFinished's int32
	} {
		var o Options
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		o.BindFlags(fs)
		if err := fs.Parse(append([]string{"--results-api-url=http://x", "--uploader-image=u"}, tc.args...)); err != nil {
			t.Fatal(err)
		}
		err := o.Validate()
		if tc.ok && err != nil {
			t.Errorf("%v: rejected: %v", tc.args, err)
		}
		if !tc.ok && (err == nil || !strings.Contains(err.Error(), "--job-ttl") || !strings.Contains(err.Error(), "--retry-backoff-max")) {
			t.Errorf("%v: err = %v, want one naming --job-ttl and --retry-backoff-max", tc.args, err)
		}
	}
}

// TestVulnDBURLIsValidated: scan Jobs get the matcher's DB URL as given;
// anything Grype could not use, or a URL carrying credentials into every
// scan Pod's environment, is refused at start-up.
func TestVulnDBURLIsValidated(t *testing.T) {
	for arg, ok := range map[string]bool{
		"":                                     true,
		"http://crowsnest-matcher:8080/vulndb": true,
		"https://mirror.example/grype":         true,
		"ftp://mirror.example/grype":           false,
		"crowsnest-matcher:8080/vulndb":        false,
		"http://user:secret@mirror/vulndb":     false,
		"http:///vulndb":                       false,
	} {
		var o Options
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		o.BindFlags(fs)
		if err := fs.Parse([]string{"--results-api-url=http://x", "--uploader-image=u", "--vulndb-url=" + arg}); err != nil {
			t.Fatal(err)
		}
		err := o.Validate()
		if ok && err != nil {
			t.Errorf("%q: rejected: %v", arg, err)
		}
		if !ok && (err == nil || !strings.Contains(err.Error(), "--vulndb-url")) {
			t.Errorf("%q: err = %v, want one naming --vulndb-url", arg, err)
		}
		if ok && o.controllerOptions().VulnDBURL != arg {
			t.Errorf("%q: controller gets %q", arg, o.controllerOptions().VulnDBURL)
		}
	}
}

func TestWatchNamespacesFromEnvAndFlag(t *testing.T) {
	parse := func(env string, args ...string) (Options, error) {
		var o Options
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		o.BindFlags(fs)
		if err := applyEnv(fs, func(k string) string { return map[string]string{"CROWSNEST_WATCH_NAMESPACES": env}[k] }); err != nil {
			return o, err
		}
		return o, fs.Parse(args)
	}
	for _, tc := range []struct {
		env  string
		args []string
		want []string
	}{
		{"", nil, nil},
		{"team-a, team-b,,team-a", nil, []string{"team-a", "team-b"}},
		{"team-a", []string{"--watch-namespaces=team-c"}, []string{"team-c"}},
		{"team-a", []string{"--watch-namespaces="}, nil},
	} {
		o, err := parse(tc.env, tc.args...)
		if err != nil || !slices.Equal(o.WatchNamespaces, tc.want) || !slices.Equal(o.controllerOptions().WatchNamespaces, tc.want) {
			t.Errorf("env %q args %q: %q, %v; want %q", tc.env, tc.args, o.WatchNamespaces, err, tc.want)
		}
	}
	if _, err := parse("team-a,Team_B"); err == nil || !strings.Contains(err.Error(), "CROWSNEST_WATCH_NAMESPACES") || !strings.Contains(err.Error(), "Team_B") {
		t.Errorf("invalid namespace from env: err = %v", err)
	}
	if _, err := parse("", "--watch-namespaces=kube-system,-x"); err == nil || !strings.Contains(err.Error(), `"-x"`) {
		t.Errorf("invalid namespace from flag: err = %v", err)
	}
}

func TestMetricsOptions(t *testing.T) {
	var o Options
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	o.BindFlags(fs)
	if err := fs.Parse([]string{"--metrics-cert-dir=/certs"}); err != nil {
		t.Fatal(err)
	}
	m := metricsOptions(o)
	if !m.SecureServing || m.FilterProvider == nil || m.CertDir != "/certs" || len(m.TLSOpts) != 1 {
		t.Fatalf("default metrics options %+v: want HTTPS behind the authn/authz filter", m)
	}
	var c tls.Config
	m.TLSOpts[0](&c)
	if !slices.Equal(c.NextProtos, []string{"http/1.1"}) {
		t.Errorf("NextProtos %q: want HTTP/2 off", c.NextProtos)
	}
	if err := fs.Parse([]string{"--metrics-secure=false", "--metrics-bind-address=127.0.0.1:9090"}); err != nil {
		t.Fatal(err)
	}
	if m := metricsOptions(o); m.SecureServing || m.FilterProvider != nil || m.BindAddress != "127.0.0.1:9090" {
		t.Errorf("--metrics-secure=false: %+v, want plain HTTP", m)
	}
}

// TestLogScope: cluster-wide is logged as the choice it is, with the RBAC it
// takes, and so is plain-HTTP metrics.
func TestLogScope(t *testing.T) {
	var out bytes.Buffer
	logScope(zap.New(zap.WriteTo(&out)), Options{MetricsAddr: ":8080"})
	for _, want := range []string{"every namespace", "ClusterRole", "--watch-namespaces", "plain HTTP"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("logs lack %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	logScope(zap.New(zap.WriteTo(&out)), Options{MetricsAddr: ":8080", MetricsSecure: true, WatchNamespaces: namespaceList{"team-a"}})
	if s := out.String(); strings.Contains(s, "ClusterRole") || strings.Contains(s, "plain HTTP") || !strings.Contains(s, `"namespaces":["team-a"]`) {
		t.Errorf("namespaced, secure: logs\n%s", s)
	}
}

// TestKubeconfigFlag: --kubeconfig FILE (controller-runtime's convention)
// picks the API server of that file; without it the default loading rules
// apply.
func TestKubeconfigFlag(t *testing.T) {
	file := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(file, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {token: abc}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := restConfig(file, noKube)
	if err != nil || cfg.Host != "https://127.0.0.1:6443" || cfg.BearerToken != "abc" {
		t.Fatalf("--kubeconfig: %+v, %v", cfg, err)
	}
	if _, err := restConfig("", noKube); err == nil || !strings.Contains(err.Error(), "no cluster") {
		t.Fatalf("without --kubeconfig the default rules are not used: %v", err)
	}
	if _, err := restConfig(filepath.Join(t.TempDir(), "missing"), noKube); err == nil {
		t.Fatal("a missing --kubeconfig file is accepted")
	}
	var o Options
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	o.BindFlags(fs)
	if err := fs.Parse([]string{"--kubeconfig", file}); err != nil || o.Kubeconfig != file {
		t.Fatalf("--kubeconfig parsed as %q: %v", o.Kubeconfig, err)
	}
}

// TestDebugAndPolicyFlagsAreValidated: unauthenticated profiles only on a
// loopback address; a scan NetworkPolicy file that would select other Pods,
// or a policy name Kubernetes refuses, stops the start.
func TestDebugAndPolicyFlagsAreValidated(t *testing.T) {
	dir := t.TempDir()
	good, wide := dir+"/good.yaml", dir+"/wide.yaml"
	const spec = "podSelector:\n  matchLabels:\n    app.kubernetes.io/name: crowsnest-scan\n    app.kubernetes.io/managed-by: crowsnest-operator\npolicyTypes: [Ingress, Egress]\n"
	if err := os.WriteFile(good, []byte(spec), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(wide, []byte("podSelector: {}\npolicyTypes: [Ingress, Egress]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string // "" accepted, else a part of the error
	}{
		{nil, ""},
		{[]string{"--pprof-bind-address=127.0.0.1:6060"}, ""},
		{[]string{"--pprof-bind-address=[::1]:6060"}, ""},
		{[]string{"--pprof-bind-address=localhost:6060"}, ""},
		{[]string{"--pprof-bind-address=:6060"}, "--pprof-bind-address"},
		{[]string{"--pprof-bind-address=0.0.0.0:6060"}, "--pprof-bind-address"},
		{[]string{"--scan-network-policy=" + good}, ""},
		{[]string{"--scan-network-policy=" + wide}, "podSelector must be exactly"},
		{[]string{"--scan-network-policy=" + dir + "/absent.yaml"}, "--scan-network-policy"},
		{[]string{"--scan-network-policy=" + good, "--scan-network-policy-name=Scan_Policy"}, "--scan-network-policy-name"},
	} {
		var o Options
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		o.BindFlags(fs)
		if err := fs.Parse(append([]string{"--results-api-url=http://x", "--uploader-image=u"}, tc.args...)); err != nil {
			t.Fatal(err)
		}
		err := o.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: rejected: %v", tc.args, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: err = %v, want one containing %q", tc.args, err, tc.want)
		}
		if tc.want == "" && len(tc.args) > 0 && strings.HasPrefix(tc.args[0], "--scan-network-policy=") && o.clusterScannerOptions().NetworkPolicy == nil {
			t.Errorf("%v: the ClusterScanner controller gets no policy", tc.args)
		}
	}
}
