package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/crowsnest-dev/crowsnest/api/cli"

	"github.com/crowsnest-dev/crowsnest/api/buildinfo"
	"github.com/crowsnest-dev/crowsnest/api/memlimit"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/authn"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/httpapi"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/hub"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/ingest"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/service"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/ui"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/vulnmetrics"
)

// options are the binary's flags; each has a CROWSNEST_* environment default.
type options struct {
	listen, metricsListen, databaseURL, databaseURLFile, natsURL string
	nats                                                         eventsv1.Credentials
	writeToken, writeTokenFile, uiDir, logLevel, logFormat       string
	origins, authMode, audience, allowedSAs                      string
	kubeconfig, rematchSAs, scanSA                               string
	readAuth, proxyUser, proxyGroups, proxyCIDRs                 string
	metricsAuth, readNamespaces                                  string
	exceptions                                                   bool
	exceptionMaxLifetime                                         time.Duration
	verifyTokens                                                 bool
	tlsCertFile, tlsKeyFile                                      string
	maxBOMBytes                                                  int64
	shutdownTimeout                                              time.Duration
	limits                                                       httpapi.Limits
	statementTimeout                                             time.Duration
	maxWSClients, maxWSClientsPerIP                              int
	reportRetention                                              time.Duration
	vulnInterval                                                 time.Duration
	vulnMaxNamespaces                                            int
	sla                                                          string
}

// bindFlags registers every flag on fs with its CROWSNEST_* default from getenv.
func bindFlags(fs *flag.FlagSet, o *options, getenv func(string) string) {
	env := func(k, def string) string {
		if v := getenv(k); v != "" {
			return v
		}
		return def
	}
	fs.StringVar(&o.listen, "listen", env("CROWSNEST_LISTEN", ":8080"), "address to serve HTTP on (env CROWSNEST_LISTEN)")
	fs.StringVar(&o.metricsListen, "metrics-listen", env("CROWSNEST_METRICS_LISTEN", ""), "address to serve /metrics on, plain HTTP, instead of --listen (so an Ingress in front of the API never exposes it), e.g. :9090 (env CROWSNEST_METRICS_LISTEN)")
	fs.StringVar(&o.databaseURL, "database-url", "", "Postgres URL, postgres://user:pass@host/db (env CROWSNEST_DATABASE_URL; a secret, never logged)")
	fs.StringVar(&o.databaseURLFile, "database-url-file", env("CROWSNEST_DATABASE_URL_FILE", ""), "file holding the Postgres URL (env CROWSNEST_DATABASE_URL_FILE)")
	fs.StringVar(&o.natsURL, "nats-url", env("CROWSNEST_NATS_URL", ""), "NATS URL; empty turns events off (env CROWSNEST_NATS_URL)")
	fs.StringVar(&o.nats.User, "nats-user", env("CROWSNEST_NATS_USER", ""), "NATS user (the chart's bundled NATS: results-api), with --nats-password-file (env CROWSNEST_NATS_USER)")
	fs.StringVar(&o.nats.PasswordFile, "nats-password-file", env("CROWSNEST_NATS_PASSWORD_FILE", ""), "file holding the NATS user's password (env CROWSNEST_NATS_PASSWORD_FILE)")
	fs.StringVar(&o.nats.CredsFile, "nats-creds", env("CROWSNEST_NATS_CREDS", ""), "NATS .creds file (JWT and NKey seed), instead of user and password (env CROWSNEST_NATS_CREDS)")
	fs.StringVar(&o.nats.NKeyFile, "nats-nkey-file", env("CROWSNEST_NATS_NKEY_FILE", ""), "file holding an NKey seed, instead of user and password (env CROWSNEST_NATS_NKEY_FILE)")
	adminFile := env("CROWSNEST_ADMIN_TOKEN_FILE", env("CROWSNEST_WRITE_TOKEN_FILE", ""))
	fs.StringVar(&o.writeTokenFile, "admin-token-file", adminFile, "file holding the static admin token, allowed to PUT and DELETE in every --auth-mode (env CROWSNEST_ADMIN_TOKEN_FILE; or the token itself in CROWSNEST_ADMIN_TOKEN). Without one, static mode refuses writes")
	fs.StringVar(&o.writeTokenFile, "write-token-file", adminFile, "alias of --admin-token-file (env CROWSNEST_WRITE_TOKEN_FILE, CROWSNEST_WRITE_TOKEN)")
	fs.Int64Var(&o.maxBOMBytes, "max-bom-bytes", envInt(env("CROWSNEST_MAX_BOM_BYTES", ""), ingest.DefaultMaxBytes), "largest accepted BOM, decompressed (env CROWSNEST_MAX_BOM_BYTES)")
	fs.StringVar(&o.uiDir, "ui-dir", env("CROWSNEST_UI_DIR", ""), "serve the web UI from this directory instead of the embedded build (env CROWSNEST_UI_DIR)")
	fs.StringVar(&o.origins, "allowed-origins", env("CROWSNEST_ALLOWED_ORIGINS", ""), "comma-separated extra Origin host patterns allowed on the WebSocket; same host is always allowed (env CROWSNEST_ALLOWED_ORIGINS)")
	fs.StringVar(&o.logLevel, "log-level", env("CROWSNEST_LOG_LEVEL", "info"), "debug, info, warn or error (env CROWSNEST_LOG_LEVEL)")
	fs.StringVar(&o.logFormat, "log-format", env("CROWSNEST_LOG_FORMAT", "json"), "log format: json or text (env CROWSNEST_LOG_FORMAT)")
	fs.StringVar(&o.authMode, "auth-mode", env("CROWSNEST_AUTH_MODE", "static"), "how write tokens are checked: static (the write token) or tokenreview (Kubernetes service-account tokens via TokenReview) (env CROWSNEST_AUTH_MODE)")
	fs.StringVar(&o.audience, "token-audience", env("CROWSNEST_TOKEN_AUDIENCE", authn.DefaultAudience), "audience service-account tokens must carry in tokenreview mode (env CROWSNEST_TOKEN_AUDIENCE)")
	fs.StringVar(&o.allowedSAs, "allowed-service-accounts", env("CROWSNEST_ALLOWED_SERVICE_ACCOUNTS", ""), "comma-separated namespace/name (or namespace/*, or */name for every namespace) service accounts allowed to write in tokenreview mode (env CROWSNEST_ALLOWED_SERVICE_ACCOUNTS)")
	fs.StringVar(&o.rematchSAs, "rematch-service-accounts", env("CROWSNEST_REMATCH_SERVICE_ACCOUNTS", ""), "comma-separated namespace/name service accounts (the matcher) that may replace existing reports in tokenreview mode (env CROWSNEST_REMATCH_SERVICE_ACCOUNTS)")
	fs.StringVar(&o.scanSA, "scan-service-account", env("CROWSNEST_SCAN_SERVICE_ACCOUNT", ""), "service account scan Pods run as; uploads from Pods running as another are refused (empty: any) (env CROWSNEST_SCAN_SERVICE_ACCOUNT)")
	fs.StringVar(&o.tlsCertFile, "tls-cert-file", env("CROWSNEST_TLS_CERT_FILE", ""), "PEM certificate (chain) to serve HTTPS with, together with --tls-key-file; reloaded when the file changes; empty serves plain HTTP (env CROWSNEST_TLS_CERT_FILE)")
	fs.StringVar(&o.tlsKeyFile, "tls-key-file", env("CROWSNEST_TLS_KEY_FILE", ""), "PEM private key of --tls-cert-file (env CROWSNEST_TLS_KEY_FILE)")
	fs.BoolVar(&o.verifyTokens, "verify-token-signatures", envBool(env("CROWSNEST_VERIFY_TOKEN_SIGNATURES", ""), true), "verify service-account tokens' signatures, issuer, audience and expiry locally against the API server's issuer keys (its OIDC discovery, "+authn.JWKSPath+") before any TokenReview, so forged tokens never reach it; turn off only where results-api cannot read those keys (env CROWSNEST_VERIFY_TOKEN_SIGNATURES)")
	fs.StringVar(&o.kubeconfig, "kubeconfig", env("CROWSNEST_KUBECONFIG", ""), "kubeconfig for TokenReview; empty uses the in-cluster config (env CROWSNEST_KUBECONFIG)")
	fs.StringVar(&o.readAuth, "read-auth", env("CROWSNEST_READ_AUTH", "kubernetes"), "how reads are authorized: kubernetes (a bearer token for --token-audience verified by TokenReview, or --auth-proxy-* headers; SubjectAccessReview list on reports.crowsnest.dev, cluster-wide or per namespace) or open (anyone reads everything) (env CROWSNEST_READ_AUTH)")
	fs.StringVar(&o.readNamespaces, "read-auth-namespaces", env("CROWSNEST_READ_AUTH_NAMESPACES", "rbac"), "which namespaces --read-auth=kubernetes reviews (SubjectAccessReview) for a reader who may not list reports cluster-wide: rbac (only those where a RoleBinding names the reader, its groups or its ServiceAccount, from a watch of RoleBindings; needs list and watch on rolebindings) or all (every namespace of the inventory, one review each: for clusters where an authorizer other than RBAC grants reads) (env CROWSNEST_READ_AUTH_NAMESPACES)")
	fs.StringVar(&o.metricsAuth, "metrics-auth", env("CROWSNEST_METRICS_AUTH", ""), "who may get /metrics, whose vulnerability metrics name every namespace: kubernetes (a bearer token checked by TokenReview for the API server's audiences, and a SubjectAccessReview for get on the non-resource URL /metrics, as the operator's; --metrics-listen then serves HTTPS, with --tls-cert-file's certificate or a self-signed one) or open; empty: as --read-auth (env CROWSNEST_METRICS_AUTH)")
	fs.StringVar(&o.proxyUser, "auth-proxy-user-header", env("CROWSNEST_AUTH_PROXY_USER_HEADER", ""), "header holding the user an authenticating proxy vouches for (e.g. X-Remote-User); believed only from --auth-proxy-trusted-cidrs (env CROWSNEST_AUTH_PROXY_USER_HEADER)")
	fs.StringVar(&o.proxyGroups, "auth-proxy-groups-header", env("CROWSNEST_AUTH_PROXY_GROUPS_HEADER", ""), "header holding the user's groups, comma-separated or repeated (e.g. X-Remote-Group) (env CROWSNEST_AUTH_PROXY_GROUPS_HEADER)")
	fs.StringVar(&o.proxyCIDRs, "auth-proxy-trusted-cidrs", env("CROWSNEST_AUTH_PROXY_TRUSTED_CIDRS", ""), "comma-separated CIDRs the authenticating proxy connects from (e.g. 127.0.0.1/32 for a sidecar); identity headers from any other peer are ignored (env CROWSNEST_AUTH_PROXY_TRUSTED_CIDRS)")
	fs.DurationVar(&o.reportRetention, "report-retention", envDurationZero(env("CROWSNEST_REPORT_RETENTION", ""), 720*time.Hour), "delete the reports of images no namespace has run for longer than this (by the operator's inventory; reports of images never seen running are kept); publishes no event; 0 keeps every report (env CROWSNEST_REPORT_RETENTION)")
	fs.DurationVar(&o.vulnInterval, "vuln-metrics-interval", envDurationZero(env("CROWSNEST_VULN_METRICS_INTERVAL", ""), vulnmetrics.DefaultInterval), "recompute the vulnerability metrics (crowsnest_vulnerabilities and kin) from the database this often, and about 2s after a report or inventory change this replica applies; 0 turns them off (env CROWSNEST_VULN_METRICS_INTERVAL)")
	fs.IntVar(&o.vulnMaxNamespaces, "vuln-metrics-max-namespaces", int(envInt(env("CROWSNEST_VULN_METRICS_MAX_NAMESPACES", ""), vulnmetrics.DefaultMaxNamespaces)), "namespaces crowsnest_namespace_vulnerabilities exports at most, those with the most critical+high findings; crowsnest_namespace_vulnerabilities_truncated counts the others (env CROWSNEST_VULN_METRICS_MAX_NAMESPACES)")
	fs.BoolVar(&o.exceptions, "exceptions", envBool(env("CROWSNEST_EXCEPTIONS", ""), false), "apply the cluster's triage decisions (VulnerabilityException, ClusterVulnerabilityException of crowsnest.dev) to reads: suppressed findings are marked and filtered, /reports/{digest}/vex and /exceptions/audit serve them; needs the CRDs and get, list and watch on them (env CROWSNEST_EXCEPTIONS)")
	fs.DurationVar(&o.exceptionMaxLifetime, "exception-max-lifetime", envDuration(env("CROWSNEST_EXCEPTION_MAX_LIFETIME", ""), 90*24*time.Hour), "an exception whose expiresAt lies more than this after its creation never applies (admission cannot check it: Kubernetes CEL has no clock) (env CROWSNEST_EXCEPTION_MAX_LIFETIME)")
	fs.StringVar(&o.sla, "sla", env("CROWSNEST_SLA", report.DefaultSLA), "remediation SLA: comma-separated severity=window (critical, high, medium, low, negligible, unknown; a severity left out has no deadline) and kev=window, counted from when a report first listed the finding in CISA KEV; a finding is overdue after the earlier deadline; windows in days (7d) or Go durations; none: no deadlines (env CROWSNEST_SLA)")
	bindLimitFlags(fs, o, env)
	fs.DurationVar(&o.shutdownTimeout, "shutdown-timeout", envDuration(env("CROWSNEST_SHUTDOWN_TIMEOUT", ""), 20*time.Second), "time to finish requests on SIGTERM (env CROWSNEST_SHUTDOWN_TIMEOUT)")
}

// bindLimitFlags registers the flags that bound what clients can make the
// server hold: time per request, memory per budget, findings, database
// statement time and WebSocket clients.
func bindLimitFlags(fs *flag.FlagSet, o *options, env func(k, def string) string) {
	l := &o.limits
	fs.DurationVar(&l.RequestTimeout, "request-timeout", envDuration(env("CROWSNEST_REQUEST_TIMEOUT", ""), httpapi.DefaultRequestTimeout), "read and write deadline of ordinary requests; it also cancels their database work (env CROWSNEST_REQUEST_TIMEOUT)")
	fs.DurationVar(&l.UploadTimeout, "upload-timeout", envDuration(env("CROWSNEST_UPLOAD_TIMEOUT", ""), httpapi.DefaultUploadTimeout), "deadline of a report upload: body, parse and store (env CROWSNEST_UPLOAD_TIMEOUT)")
	fs.DurationVar(&l.DownloadTimeout, "download-timeout", envDuration(env("CROWSNEST_DOWNLOAD_TIMEOUT", ""), httpapi.DefaultDownloadTimeout), "deadline of a BOM download (env CROWSNEST_DOWNLOAD_TIMEOUT)")
	fs.Int64Var(&l.IngestMemory, "ingest-memory-bytes", envInt(env("CROWSNEST_INGEST_MEMORY_BYTES", ""), httpapi.DefaultIngestMemory), "memory uploads in flight may hold together; an upload is charged its compressed bytes plus 4x its BOM size (env CROWSNEST_INGEST_MEMORY_BYTES)")
	fs.Int64Var(&l.ReadMemory, "read-memory-bytes", envInt(env("CROWSNEST_READ_MEMORY_BYTES", ""), httpapi.DefaultReadMemory), "memory BOM downloads and report details in flight may hold together (env CROWSNEST_READ_MEMORY_BYTES)")
	fs.DurationVar(&l.MemoryWait, "memory-wait", envDuration(env("CROWSNEST_MEMORY_WAIT", ""), httpapi.DefaultMemoryWait), "how long a request waits for memory before 503 with Retry-After (env CROWSNEST_MEMORY_WAIT)")
	fs.IntVar(&l.MaxFindings, "max-findings", int(envInt(env("CROWSNEST_MAX_FINDINGS", ""), ingest.DefaultMaxFindings)), "largest accepted number of findings per report; more is refused with 413 (env CROWSNEST_MAX_FINDINGS)")
	fs.DurationVar(&o.statementTimeout, "statement-timeout", envDuration(env("CROWSNEST_STATEMENT_TIMEOUT", ""), store.DefaultStatementTimeout), "Postgres statement_timeout of every query; a timed-out request gets 503 (env CROWSNEST_STATEMENT_TIMEOUT)")
	fs.IntVar(&o.maxWSClients, "max-websocket-clients", int(envInt(env("CROWSNEST_MAX_WEBSOCKET_CLIENTS", ""), hub.DefaultMaxClients)), "WebSocket clients served at once; more get 503 (env CROWSNEST_MAX_WEBSOCKET_CLIENTS)")
	fs.IntVar(&o.maxWSClientsPerIP, "max-websocket-clients-per-ip", int(envInt(env("CROWSNEST_MAX_WEBSOCKET_CLIENTS_PER_IP", ""), hub.DefaultMaxClientsPerAddr)), "WebSocket clients per source address (behind a proxy: the proxy's); more get 429 (env CROWSNEST_MAX_WEBSOCKET_CLIENTS_PER_IP)")
}

// checkLimits refuses limits that would turn a protection off.
func checkLimits(o *options) error {
	l := o.limits
	for name, v := range map[string]int64{"request-timeout": int64(l.RequestTimeout), "upload-timeout": int64(l.UploadTimeout),
		"download-timeout": int64(l.DownloadTimeout), "ingest-memory-bytes": l.IngestMemory, "read-memory-bytes": l.ReadMemory,
		"memory-wait": int64(l.MemoryWait), "max-findings": int64(l.MaxFindings), "statement-timeout": int64(o.statementTimeout),
		"max-websocket-clients": int64(o.maxWSClients), "max-websocket-clients-per-ip": int64(o.maxWSClientsPerIP),
		"max-bom-bytes": o.maxBOMBytes, "vuln-metrics-max-namespaces": int64(o.vulnMaxNamespaces)} {
		if v <= 0 {
			return fmt.Errorf("--%s must be positive", name)
		}
	}
	return nil
}

func parseFlags(args []string, getenv func(string) string, out io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("results-api", flag.ContinueOnError)
	fs.SetOutput(out)
	bindFlags(fs, o, getenv)
	version := fs.Bool("version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if *version {
		fmt.Fprintln(out, buildinfo.String("results-api"))
		return nil, errVersion
	}
	if err := checkLimits(o); err != nil {
		return nil, err
	}
	if (o.tlsCertFile == "") != (o.tlsKeyFile == "") {
		return nil, errors.New("--tls-cert-file and --tls-key-file go together: set both to serve HTTPS, or neither")
	}
	var err error
	if o.databaseURL == "" {
		o.databaseURL = getenv("CROWSNEST_DATABASE_URL")
	}
	if o.databaseURL == "" && o.databaseURLFile != "" {
		if o.databaseURL, err = readSecret(o.databaseURLFile); err != nil {
			return nil, err
		}
	}
	if o.databaseURL == "" {
		return nil, errors.New("no database: set --database-url, CROWSNEST_DATABASE_URL or --database-url-file")
	}
	o.writeToken = getenv("CROWSNEST_ADMIN_TOKEN")
	if o.writeToken == "" {
		o.writeToken = getenv("CROWSNEST_WRITE_TOKEN")
	}
	if o.writeTokenFile != "" {
		if o.writeToken, err = readSecret(o.writeTokenFile); err != nil {
			return nil, err
		}
	}
	return o, nil
}

func envInt(v string, def int64) int64 {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 {
		return n
	}
	return def
}

func envBool(v string, def bool) bool {
	if b, err := strconv.ParseBool(v); err == nil {
		return b
	}
	return def
}

func envDuration(v string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(v); err == nil && d > 0 {
		return d
	}
	return def
}

// envDurationZero is envDuration accepting 0 (a feature turned off).
func envDurationZero(v string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(v); err == nil && d >= 0 {
		return d
	}
	return def
}

func readSecret(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read secret file: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// run starts the API and serves until ctx is cancelled, then shuts down
// gracefully.
func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	o, err := parseFlags(args, getenv, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(o.logLevel)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	handler, err := cli.LogHandler(o.logFormat, stdout, lvl)
	if err != nil {
		return err
	}
	log := slog.New(handler)
	slog.SetDefault(log)
	limit, source, err := memlimit.Set(getenv, memlimit.CgroupFile)
	if err != nil {
		return err
	}
	if limit > 0 {
		log.Info("go memory limit set", "bytes", limit, "from", source)
	}

	uiFS := ui.Embedded()
	if o.uiDir != "" {
		uiFS = ui.Dir(o.uiDir)
	}
	var origins []string
	for _, p := range strings.Split(o.origins, ",") {
		if p = strings.TrimSpace(p); p != "" {
			origins = append(origins, p)
		}
	}
	natsConnect, err := o.nats.Options()
	if err != nil {
		return err
	}
	sla, err := report.ParseSLA(o.sla)
	if err != nil {
		return fmt.Errorf("--sla: %w", err)
	}
	cfg := service.Config{SLA: sla, SeparateMetrics: o.metricsListen != "", DatabaseURL: o.databaseURL, NATSURL: o.natsURL, NATSConnect: natsConnect, WriteToken: o.writeToken,
		MaxBOMBytes: o.maxBOMBytes, OriginPatterns: origins, UI: ui.Handler(uiFS), Logger: log,
		Limits: o.limits, StatementTimeout: o.statementTimeout,
		MaxWebSocketClients: o.maxWSClients, MaxWebSocketClientsPerAddr: o.maxWSClientsPerIP, ReportRetention: o.reportRetention,
		VulnMetrics: vulnmetrics.Options{Interval: o.vulnInterval, MaxNamespaces: o.vulnMaxNamespaces}}
	keys := &issuerKeys{on: o.verifyTokens}
	if !o.verifyTokens {
		log.Warn("--verify-token-signatures=false: every well-formed token costs a TokenReview, and a flood of forged ones can lock out valid tokens for a while")
	}
	switch o.authMode {
	case "static":
		if o.writeToken == "" {
			log.Warn("no write token configured: PUT and DELETE will be refused")
		}
	case "tokenreview":
		if cfg.Gate, err = writeGate(o, keys); err != nil {
			return err
		}
	default:
		return fmt.Errorf("--auth-mode %q: want static or tokenreview", o.authMode)
	}
	switch o.readAuth {
	case "open":
		log.Warn("--read-auth=open: anyone who reaches the API reads every report")
	case "kubernetes":
		if cfg.Reads, err = readAuth(o, cfg.Gate, keys); err != nil {
			return err
		}
	default:
		return fmt.Errorf("--read-auth %q: want kubernetes or open", o.readAuth)
	}
	if o.exceptions {
		if cfg.Exceptions, err = exceptionWatch(o); err != nil {
			return err
		}
	}
	switch metricsAuthMode(o) {
	case "open":
		if o.readAuth != "open" {
			log.Warn("--metrics-auth=open: anyone who reaches /metrics learns every namespace's vulnerability counts")
		}
	case "kubernetes":
		if cfg.Scrapers, err = metricsAuth(o, keys); err != nil {
			return err
		}
	default:
		return fmt.Errorf("--metrics-auth %q: want kubernetes or open", o.metricsAuth)
	}
	var certs *certReloader
	if o.tlsCertFile != "" {
		if certs, err = newCertReloader(o.tlsCertFile, o.tlsKeyFile, log); err != nil {
			return err
		}
	}
	svc, err := service.New(ctx, cfg)
	if err != nil {
		return err
	}
	defer svc.Close()

	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	// Read and write deadlines are per route (httpapi.Limits): a server-wide
	// one would cut BOM downloads and WebSockets short.
	srv := &http.Server{Handler: svc.Handler, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	errc := make(chan error, 1)
	if certs != nil {
		srv.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: certs.GetCertificate}
		// HTTP/1.1 only, as on plain HTTP: the per-route deadlines, memory
		// budgets and WebSocket caps were built and measured for it.
		srv.Protocols = new(http.Protocols)
		srv.Protocols.SetHTTP1(true)
		go func() { errc <- srv.ServeTLS(ln, "", "") }()
	} else {
		go func() { errc <- srv.Serve(ln) }()
	}
	if o.metricsListen != "" {
		msrv, err := serveMetrics(o.metricsListen, svc.MetricsHandler, cfg.Scrapers != nil, certs, log, errc)
		if err != nil {
			_ = srv.Close()
			return err
		}
		defer msrv.Close()
	}
	log.Info("serving", "addr", ln.Addr().String(), "tls", certs != nil, "events", o.natsURL != "", "max_bom_bytes", o.maxBOMBytes,
		"ingest_memory_bytes", o.limits.IngestMemory, "read_memory_bytes", o.limits.ReadMemory, "max_findings", o.limits.MaxFindings)

	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), o.shutdownTimeout)
	defer cancel()
	svc.Hub.Close() // WebSockets are hijacked: Shutdown does not wait for them
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// certReloader hands the TLS handshake the certificate in certFile and
// keyFile, loaded again whenever either file's modification time or size
// changes: a renewed Secret (cert-manager) reaches the Pod's mounted files
// without a restart. A pair that fails to load (the two files caught
// mid-rotation) keeps the previous certificate in service.
type certReloader struct {
	certFile, keyFile string
	log               *slog.Logger

	mu     sync.Mutex
	cert   *tls.Certificate
	loaded [2]fileStamp // of the pair in cert
	// The last pair that did not load, so it is warned about once.
	failed    [2]fileStamp
	hasFailed bool
}

// fileStamp is what tells a changed file apart: modification time (Unix
// nanoseconds) and size.
type fileStamp struct{ mod, size int64 }

func newCertReloader(certFile, keyFile string, log *slog.Logger) (*certReloader, error) {
	r := &certReloader{certFile: certFile, keyFile: keyFile, log: log}
	stamps, err := r.stamps()
	if err != nil {
		return nil, fmt.Errorf("tls certificate: %w", err)
	}
	if err := r.load(stamps); err != nil {
		return nil, fmt.Errorf("tls certificate: %w", err)
	}
	return r, nil
}

// GetCertificate is tls.Config.GetCertificate.
func (r *certReloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	stamps, err := r.stamps()
	if (err == nil && stamps == r.loaded) || (r.hasFailed && stamps == r.failed) {
		return r.cert, nil
	}
	if err == nil {
		err = r.load(stamps)
	}
	if err != nil {
		r.failed, r.hasFailed = stamps, true
		r.log.Warn("tls certificate not reloaded; serving the previous one", "error", err)
	}
	return r.cert, nil
}

func (r *certReloader) stamps() ([2]fileStamp, error) {
	var s [2]fileStamp
	for i, f := range []string{r.certFile, r.keyFile} {
		fi, err := os.Stat(f)
		if err != nil {
			return s, err
		}
		s[i] = fileStamp{fi.ModTime().UnixNano(), fi.Size()}
	}
	return s, nil
}

func (r *certReloader) load(stamps [2]fileStamp) error {
	cert, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		return err
	}
	r.cert, r.loaded = &cert, stamps
	r.log.Info("tls certificate loaded", "cert_file", r.certFile)
	return nil
}
