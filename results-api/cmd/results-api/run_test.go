package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"flag"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/test/support"

	"github.com/crowsnest-dev/crowsnest/test/support/natstest"
	"github.com/crowsnest-dev/crowsnest/test/support/pgtest"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/bomtest"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/httpapi"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func envMap(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestHelpListsEveryFlag(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"--help"}, envMap(nil), &out); err != nil {
		t.Fatalf("--help: %v", err)
	}
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	(&Options{}).BindFlags(fs, envMap(nil))
	n := 0
	fs.VisitAll(func(f *flag.Flag) {
		n++
		if !strings.Contains(out.String(), "-"+f.Name) {
			t.Errorf("--help lacks -%s", f.Name)
		}
		if !strings.Contains(f.Usage, "env CROWSNEST_") {
			t.Errorf("-%s names no CROWSNEST_* variable: %q", f.Name, f.Usage)
		}
	})
	if n < 10 {
		t.Fatalf("only %d flags registered", n)
	}
}

func TestFlagsEnvDefaults(t *testing.T) {
	dir := t.TempDir()
	tokenFile, dbFile := filepath.Join(dir, "token"), filepath.Join(dir, "db")
	_ = os.WriteFile(tokenFile, []byte("  file-token\n"), 0o600)
	_ = os.WriteFile(dbFile, []byte("postgres://from-file/db\n"), 0o600)
	env := map[string]string{
		"CROWSNEST_LISTEN": "127.0.0.1:9999", "CROWSNEST_DATABASE_URL_FILE": dbFile, "CROWSNEST_NATS_URL": "nats://n:4222",
		"CROWSNEST_WRITE_TOKEN_FILE": tokenFile, "CROWSNEST_MAX_BOM_BYTES": "1234", "CROWSNEST_UI_DIR": "/ui",
		"CROWSNEST_ALLOWED_ORIGINS": "a.example", "CROWSNEST_LOG_LEVEL": "debug", "CROWSNEST_SHUTDOWN_TIMEOUT": "3s",
		"CROWSNEST_REQUEST_TIMEOUT": "11s", "CROWSNEST_UPLOAD_TIMEOUT": "12s", "CROWSNEST_DOWNLOAD_TIMEOUT": "13s",
		"CROWSNEST_INGEST_MEMORY_BYTES": "1000", "CROWSNEST_READ_MEMORY_BYTES": "2000", "CROWSNEST_MEMORY_WAIT": "4s",
		"CROWSNEST_MAX_FINDINGS": "7", "CROWSNEST_STATEMENT_TIMEOUT": "2s", "CROWSNEST_MAX_WEBSOCKET_CLIENTS": "50",
		"CROWSNEST_MAX_WEBSOCKET_CLIENTS_PER_IP": "5", "CROWSNEST_VULN_METRICS_INTERVAL": "0s", "CROWSNEST_VULN_METRICS_MAX_NAMESPACES": "9",
		"CROWSNEST_VERIFY_TOKEN_SIGNATURES": "false", "CROWSNEST_METRICS_AUTH": "open", "CROWSNEST_READ_AUTH_NAMESPACES": "all",
		"CROWSNEST_EXCEPTIONS": "true", "CROWSNEST_EXCEPTION_MAX_LIFETIME": "720h", "CROWSNEST_SLA": "critical=1d",
	}
	o, err := parseFlags(nil, envMap(env), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := Options{Listen: "127.0.0.1:9999", DatabaseURL: "postgres://from-file/db", DatabaseURLFile: dbFile,
		NATSURL: "nats://n:4222", WriteToken: "file-token", WriteTokenFile: tokenFile, UIDir: "/ui", LogLevel: "debug", LogFormat: "json",
		Origins: "a.example", MaxBOMBytes: 1234, ShutdownTimeout: 3 * time.Second,
		AuthMode: "static", Audience: "crowsnest-results-api", ReadAuth: "kubernetes", ReportRetention: 720 * time.Hour,
		Limits: httpapi.Limits{RequestTimeout: 11 * time.Second, UploadTimeout: 12 * time.Second, DownloadTimeout: 13 * time.Second,
			IngestMemory: 1000, ReadMemory: 2000, MemoryWait: 4 * time.Second, MaxFindings: 7},
		StatementTimeout: 2 * time.Second, MaxWSClients: 50, MaxWSClientsPerIP: 5, VulnMaxNamespaces: 9,
		MetricsAuth: "open", ReadNamespaces: "all", Exceptions: true, ExceptionMaxLifetime: 720 * time.Hour, SLA: "critical=1d"}
	if *o != want {
		t.Fatalf("env defaults:\n got %+v\nwant %+v", *o, want)
	}
	// Flags win over env; CROWSNEST_DATABASE_URL wins over the file.
	env["CROWSNEST_DATABASE_URL"] = "postgres://from-env/db"
	o, err = parseFlags([]string{"--listen", ":1", "--max-bom-bytes", "99"}, envMap(env), io.Discard)
	if err != nil || o.Listen != ":1" || o.MaxBOMBytes != 99 || o.DatabaseURL != "postgres://from-env/db" {
		t.Fatalf("flags over env: %+v, %v", o, err)
	}
	if o, err = parseFlags(nil, envMap(map[string]string{"CROWSNEST_DATABASE_URL": "x"}), io.Discard); err != nil ||
		o.Listen != ":8080" || o.MaxBOMBytes != 32<<20 || o.ShutdownTimeout != 20*time.Second || o.WriteToken != "" {
		t.Fatalf("built-in defaults: %+v, %v", o, err)
	}
	wantLimits := httpapi.Limits{RequestTimeout: 30 * time.Second, UploadTimeout: 2 * time.Minute, DownloadTimeout: 5 * time.Minute,
		IngestMemory: 192 << 20, ReadMemory: 64 << 20, MemoryWait: 5 * time.Second, MaxFindings: 50000}
	if o.Limits != wantLimits || o.StatementTimeout != 15*time.Second || o.MaxWSClients != 1000 || o.MaxWSClientsPerIP != 20 {
		t.Fatalf("built-in limits: %+v, statement timeout %v, websocket clients %d, per IP %d",
			o.Limits, o.StatementTimeout, o.MaxWSClients, o.MaxWSClientsPerIP)
	}
	if o.VulnInterval != 15*time.Second || o.VulnMaxNamespaces != 500 {
		t.Fatalf("built-in vulnerability metrics: interval %v, max namespaces %d", o.VulnInterval, o.VulnMaxNamespaces)
	}
	for _, off := range []string{"--max-findings=0", "--ingest-memory-bytes=-1", "--statement-timeout=0s", "--max-websocket-clients-per-ip=0",
		"--vuln-metrics-max-namespaces=0"} {
		if _, err := parseFlags([]string{off}, envMap(env), io.Discard); err == nil || !strings.Contains(err.Error(), "must be positive") {
			t.Errorf("%s: %v, want a refusal", off, err)
		}
	}
	if _, err := parseFlags(nil, envMap(nil), io.Discard); err == nil || !strings.Contains(err.Error(), "no database") {
		t.Fatalf("missing database: %v", err)
	}
	if _, err := parseFlags([]string{"--write-token-file", filepath.Join(dir, "missing")}, envMap(env), io.Discard); err == nil {
		t.Fatal("missing token file accepted")
	}
}

// started runs run() in the background and returns the served base URL,
// the log and a stop function that cancels and returns run's error.
func started(t *testing.T, args []string, env map[string]string) (string, *support.Buffer, func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	logs := &support.Buffer{}
	errc := make(chan error, 1)
	// These tests run no API server: reads are open.
	args = append([]string{"--read-auth=open"}, args...)
	go func() { errc <- run(ctx, args, envMap(env), logs) }()
	stop := func() error {
		cancel()
		select {
		case err := <-errc:
			return err
		case <-time.After(30 * time.Second):
			t.Fatal("run did not return within 30s of cancel")
			return nil
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		for _, line := range strings.Split(logs.String(), "\n") {
			var rec struct{ Msg, Addr string }
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "serving" {
				return "http://" + rec.Addr, logs, stop
			}
		}
		select {
		case err := <-errc:
			t.Fatalf("run exited early: %v\n%s", err, logs)
		case <-time.After(20 * time.Millisecond):
		}
	}
	cancel()
	t.Fatalf("no serving log within 60s:\n%s", logs)
	return "", nil, nil
}

func get(t *testing.T, u string) (int, string) {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// withPassword adds a password to a DSN; the throwaway server trusts
// loopback, so it is accepted, and must never be logged.
func withPassword(t *testing.T, dsn, pw string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(u.User.Username(), pw)
	return u.String()
}

func TestRunServesAndShutsDown(t *testing.T) {
	const token, password = "tok-5ecret-7a1c9e", "pw-5ecret-b83d0f"
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"CROWSNEST_DATABASE_URL": withPassword(t, pgtest.NewDatabase(t), password),
		"CROWSNEST_WRITE_TOKEN_FILE": tokenFile, "CROWSNEST_LOG_LEVEL": "debug"}
	base, logs, stop := started(t, []string{"--listen", "127.0.0.1:0"}, env)

	for _, p := range []string{"/healthz", "/readyz"} {
		if code, body := get(t, base+p); code != http.StatusOK {
			t.Fatalf("%s: %d %s", p, code, body)
		}
	}
	d := bomtest.Digest(42)
	put := func(auth string) int {
		req, _ := http.NewRequest(http.MethodPut, base+"/api/v1/reports/"+d, bytes.NewReader(bomtest.BOM(bomtest.Random(1, 5)...)))
		req.Header.Set("Content-Type", "application/vnd.cyclonedx+json")
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := put(""); code != http.StatusUnauthorized {
		t.Fatalf("anonymous PUT: %d", code)
	}
	if code := put("wrong"); code != http.StatusForbidden {
		t.Fatalf("wrong-token PUT: %d", code)
	}
	if code := put(token); code != http.StatusCreated {
		t.Fatalf("PUT with the token from the file: %d", code)
	}
	if err := stop(); err != nil {
		t.Fatalf("graceful shutdown: %v", err)
	}
	if _, err := (&http.Client{Timeout: 2 * time.Second}).Get(base + "/healthz"); err == nil {
		t.Fatal("still serving after shutdown")
	}
	out := logs.String()
	if !strings.Contains(out, `"msg":"shutting down"`) {
		t.Errorf("no shutdown log:\n%s", out)
	}
	for _, secret := range []string{token, password} {
		if strings.Contains(out, secret) {
			t.Errorf("log contains secret %q:\n%s", secret, out)
		}
	}
}

// /readyz turns 503 when Postgres goes away; /healthz stays 200.
func TestReadyzFailsWithPostgresStopped(t *testing.T) {
	pg, err := pgtest.StartServer()
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = pg.Stop()
		}
	}()
	base, _, stop := started(t, []string{"--listen", "127.0.0.1:0", "--database-url", pg.AdminURL()}, nil)
	defer func() { _ = stop() }()
	if code, body := get(t, base+"/readyz"); code != http.StatusOK {
		t.Fatalf("readyz with Postgres up: %d %s", code, body)
	}
	if err := pg.Stop(); err != nil {
		t.Fatal(err)
	}
	stopped = true
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, body := get(t, base+"/readyz")
		if code == http.StatusServiceUnavailable && strings.Contains(body, "postgres") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("readyz with Postgres stopped: %d %s", code, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code, body := get(t, base+"/readyz?verbose"); code != http.StatusServiceUnavailable ||
		!strings.HasPrefix(body, "[-]postgres failed: ") || !strings.HasSuffix(body, "readyz check failed\n") {
		t.Fatalf("readyz?verbose with Postgres stopped: %d %q", code, body)
	}
	if code, _ := get(t, base+"/healthz"); code != http.StatusOK {
		t.Fatalf("healthz with Postgres stopped: %d", code)
	}
}

// /readyz does not depend on NATS: with NATS stopped it stays 200 (reports
// are stored, their events wait in the outbox); ?verbose, the
// crowsnest_results_api_nats_connected gauge and a log line say NATS is
// down, and again when it is back.
func TestReadyzWithNATSStopped(t *testing.T) {
	ns, natsURL := natstest.StartT(t)
	env := map[string]string{"CROWSNEST_DATABASE_URL": pgtest.NewDatabase(t), "CROWSNEST_NATS_URL": natsURL}
	base, logs, stop := started(t, []string{"--listen", "127.0.0.1:0"}, env)
	defer func() { _ = stop() }()
	gauge := func() string {
		_, body := get(t, base+"/metrics")
		for _, line := range strings.Split(body, "\n") {
			if v, ok := strings.CutPrefix(line, "crowsnest_results_api_nats_connected "); ok {
				return v
			}
		}
		return "absent"
	}
	if code, body := get(t, base+"/readyz?verbose"); code != http.StatusOK ||
		body != "[+]postgres ok\n[+]nats ok\nreadyz check passed\n" || gauge() != "1" {
		t.Fatalf("with NATS up: readyz?verbose %d %q, nats_connected %s", code, body, gauge())
	}

	ns.Stop()
	waitUntil(t, func() bool { return gauge() == "0" })
	if code, body := get(t, base+"/readyz"); code != http.StatusOK || body != "ok\n" {
		t.Fatalf("readyz with NATS stopped: %d %q", code, body)
	}
	code, body := get(t, base+"/readyz?verbose")
	if code != http.StatusOK || !strings.HasPrefix(body, "[+]postgres ok\n[-]nats failed (informational, not counted): nats ") ||
		!strings.HasSuffix(body, "readyz check passed\n") {
		t.Fatalf("readyz?verbose with NATS stopped: %d %q", code, body)
	}
	if !strings.Contains(logs.String(), `"msg":"nats disconnected; events wait in the outbox"`) {
		t.Errorf("no log line for the disconnect:\n%s", logs)
	}

	if err := ns.Restart(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, func() bool { return gauge() == "1" })
	if code, body := get(t, base+"/readyz?verbose"); code != http.StatusOK || !strings.Contains(body, "[+]nats ok\n") {
		t.Fatalf("readyz?verbose with NATS back: %d %q", code, body)
	}
	if !strings.Contains(logs.String(), `"msg":"nats reconnected"`) {
		t.Errorf("no log line for the reconnect:\n%s", logs)
	}
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 20s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestAuthModeFlags(t *testing.T) {
	env := map[string]string{"CROWSNEST_DATABASE_URL": "postgres://127.0.0.1:1/none"}
	for args, want := range map[string]string{
		"--auth-mode=bogus":       "want static or tokenreview",
		"--auth-mode=tokenreview": "needs --allowed-service-accounts",
		"--auth-mode=tokenreview --allowed-service-accounts=ns/sa --kubeconfig=/nonexistent":             "kubernetes config for tokenreview",
		"--auth-mode=tokenreview --allowed-service-accounts=no-slash --kubeconfig=" + writeKubeconfig(t): "want namespace/name",
		"--auth-mode=tokenreview --allowed-service-accounts=*/crowsnest-scan --scan-service-account=crowsnest-scan " +
			"--rematch-service-accounts=scans/crowsnest-scan --kubeconfig=" + writeKubeconfig(t): "is the scan service account",
		"--auth-mode=tokenreview --allowed-service-accounts=crowsnest/* " +
			"--rematch-service-accounts=crowsnest/matcher --kubeconfig=" + writeKubeconfig(t): "may also upload",
	} {
		err := run(context.Background(), strings.Fields(args), envMap(env), io.Discard)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", args, err, want)
		}
	}
}

// TestReadAuthFlags: --read-auth=kubernetes (the default) needs a
// Kubernetes configuration, proxy headers need trusted CIDRs, and open warns.
// (Also: --report-retention 0 turns pruning off.)
func TestReadAuthFlags(t *testing.T) {
	env := map[string]string{"CROWSNEST_DATABASE_URL": "postgres://127.0.0.1:1/none"}
	kc := writeKubeconfig(t)
	for args, want := range map[string]string{
		"--read-auth=bogus": "want kubernetes or open",
		"--read-auth-namespaces=some --kubeconfig=" + kc:                                                   "want rbac or all",
		"--read-auth=open --metrics-auth=bogus":                                                            "want kubernetes or open",
		"--read-auth=open --metrics-auth=kubernetes --kubeconfig=/nonexistent":                             "kubernetes config for tokenreview",
		"--kubeconfig=/nonexistent":                                                                        "kubernetes config for tokenreview",
		"--auth-proxy-user-header=X-Remote-User --kubeconfig=" + kc:                                        "needs --auth-proxy-trusted-cidrs",
		"--auth-proxy-user-header=X-Remote-User --auth-proxy-trusted-cidrs=10.0.0.0/33 --kubeconfig=" + kc: "--auth-proxy-trusted-cidrs",
	} {
		err := run(context.Background(), strings.Fields(args), envMap(env), io.Discard)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", args, err, want)
		}
	}
	if o, err := parseFlags(nil, envMap(map[string]string{"CROWSNEST_DATABASE_URL": "x", "CROWSNEST_REPORT_RETENTION": "0"}), io.Discard); err != nil || o.ReportRetention != 0 {
		t.Errorf("CROWSNEST_REPORT_RETENTION=0: %v, %v; want retention off", o, err)
	}
	base, logs, stop := started(t, []string{"--listen", "127.0.0.1:0", "--database-url", pgtest.NewDatabase(t)}, nil)
	defer func() { _ = stop() }()
	_ = base
	if !strings.Contains(logs.String(), "--read-auth=open: anyone who reaches the API reads every report") {
		t.Errorf("no warning for --read-auth=open in %s", logs.String())
	}
}

func writeKubeconfig(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n" +
		"users: [{name: u, user: {token: x}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n"
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// writeSelfSigned writes a self-signed certificate for 127.0.0.1 and
// localhost (serial number serial) and its key to certFile and keyFile, and
// returns the certificate.
func writeSelfSigned(t *testing.T, certFile, keyFile string, serial int64) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "results-api test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, BasicConstraintsValid: true, IsCA: true,
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// httpsGet GETs u on a new connection, trusting only roots, and returns the
// status and the serial number of the certificate the server presented.
func httpsGet(t *testing.T, u string, roots *x509.CertPool) (int, int64) {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}, DisableKeepAlives: true}}
	resp, err := c.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.TLS.PeerCertificates[0].SerialNumber.Int64()
}

// TestServesHTTPSAndReloadsCertificate: with --tls-cert-file and
// --tls-key-file (here from the environment, as the chart sets them) the API
// is HTTPS only: a client trusting the certificate gets /healthz, a
// plain-HTTP request does not, and a certificate replaced on disk (as a
// renewed Secret is) is served on the next connection without a restart.
func TestServesHTTPSAndReloadsCertificate(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	first := writeSelfSigned(t, certFile, keyFile, 1)
	env := map[string]string{"CROWSNEST_DATABASE_URL": pgtest.NewDatabase(t),
		"CROWSNEST_TLS_CERT_FILE": certFile, "CROWSNEST_TLS_KEY_FILE": keyFile}
	base, logs, stop := started(t, []string{"--listen", "127.0.0.1:0"}, env)
	defer func() {
		if err := stop(); err != nil {
			t.Errorf("graceful shutdown: %v", err)
		}
	}()
	addr := strings.TrimPrefix(base, "http://")
	if !strings.Contains(logs.String(), `"tls":true`) {
		t.Errorf("serving log does not say tls:\n%s", logs)
	}

	roots := x509.NewCertPool()
	roots.AddCert(first)
	if code, serial := httpsGet(t, "https://"+addr+"/healthz", roots); code != http.StatusOK || serial != 1 {
		t.Fatalf("HTTPS /healthz: %d with certificate %d, want 200 with 1", code, serial)
	}
	// Go's TLS server answers a plain-HTTP request with 400 and closes.
	if code, body := get(t, "http://"+addr+"/healthz"); code == http.StatusOK || !strings.Contains(body, "HTTPS") {
		t.Fatalf("plain HTTP /healthz: %d %q, want a refusal", code, body)
	}
	// An untrusted client fails the handshake.
	if _, err := (&http.Client{Timeout: 5 * time.Second}).Get("https://" + addr + "/healthz"); err == nil {
		t.Fatal("HTTPS with the system roots succeeded against a self-signed certificate")
	}

	second := writeSelfSigned(t, certFile, keyFile, 2)
	// A modification time the first pair cannot share, whatever the
	// filesystem's clock resolution.
	later := time.Now().Add(2 * time.Second)
	for _, f := range []string{certFile, keyFile} {
		if err := os.Chtimes(f, later, later); err != nil {
			t.Fatal(err)
		}
	}
	roots.AddCert(second)
	if code, serial := httpsGet(t, "https://"+addr+"/healthz", roots); code != http.StatusOK || serial != 2 {
		t.Fatalf("after renewal: %d with certificate %d, want 200 with 2", code, serial)
	}
	// A broken pair (a key that does not match) keeps the last good one.
	writeSelfSigned(t, filepath.Join(dir, "other.crt"), keyFile, 3)
	if err := os.Chtimes(keyFile, later.Add(time.Second), later.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if code, serial := httpsGet(t, "https://"+addr+"/healthz", roots); code != http.StatusOK || serial != 2 {
		t.Fatalf("with a mismatched key on disk: %d with certificate %d, want 200 with 2", code, serial)
	}
	if !strings.Contains(logs.String(), "tls certificate not reloaded") {
		t.Errorf("no warning about the mismatched pair:\n%s", logs)
	}
}

func TestTLSFlagsGoTogether(t *testing.T) {
	env := map[string]string{"CROWSNEST_DATABASE_URL": "postgres://127.0.0.1:1/none"}
	for _, args := range [][]string{{"--tls-cert-file=/x/tls.crt"}, {"--tls-key-file=/x/tls.key"}} {
		if _, err := parseFlags(args, envMap(env), io.Discard); err == nil || !strings.Contains(err.Error(), "go together") {
			t.Errorf("%v: %v, want a refusal", args, err)
		}
	}
	dir := t.TempDir()
	err := run(context.Background(), []string{"--read-auth=open", "--tls-cert-file", filepath.Join(dir, "missing.crt"), "--tls-key-file", filepath.Join(dir, "missing.key")},
		envMap(env), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "tls certificate") {
		t.Errorf("missing certificate files: %v, want a start-up error", err)
	}
}

// TestMetricsOnTheirOwnListener: with --metrics-listen, /metrics is served
// there and no longer on --listen, so an Ingress routed to the API port
// cannot expose it.
func TestMetricsOnTheirOwnListener(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("tok-metrics-listen\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"CROWSNEST_DATABASE_URL": pgtest.NewDatabase(t), "CROWSNEST_WRITE_TOKEN_FILE": tokenFile}
	base, logs, stop := started(t, []string{"--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"}, env)
	defer func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	}()
	var metricsAddr string
	for _, line := range strings.Split(logs.String(), "\n") {
		var rec struct{ Msg, Addr string }
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "serving metrics" {
			metricsAddr = rec.Addr
		}
	}
	if metricsAddr == "" {
		t.Fatalf("no metrics listener logged:\n%s", logs)
	}
	if code, body := get(t, "http://"+metricsAddr+"/metrics"); code != http.StatusOK || !strings.Contains(body, "crowsnest_results_api_") {
		t.Fatalf("/metrics on the metrics listener: %d", code)
	}
	// The vulnerability metrics are on by default: refreshed at start.
	deadline := time.Now().Add(30 * time.Second)
	for _, body := get(t, "http://"+metricsAddr+"/metrics"); !strings.Contains(body, `crowsnest_images{state="unscanned"} 0`); _, body = get(t, "http://"+metricsAddr+"/metrics") {
		if time.Now().After(deadline) {
			t.Fatalf("no vulnerability metrics within 30s:\n%s", body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The dashboard's fallback may answer the path; the metrics must not.
	if _, body := get(t, base+"/metrics"); strings.Contains(body, "crowsnest_results_api_") {
		t.Fatal("/metrics still served on the API listener")
	}
	if code, _ := get(t, base+"/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz on the API listener: %d", code)
	}
}
