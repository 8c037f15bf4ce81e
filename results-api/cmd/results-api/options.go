package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/crowsnest-dev/crowsnest/api/buildinfo"
	"github.com/crowsnest-dev/crowsnest/api/cli"
	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/authn"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/httpapi"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/hub"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/ingest"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/vulnmetrics"
)

// Options is results-api's configuration: every field but WriteToken is a
// flag, and every flag takes its default from a CROWSNEST_* environment
// variable. parseFlags fills it, Validate checks it, loadSecrets reads the
// secret files it names, and start wires the service from it.
type Options struct {
	// Serving.
	Listen, MetricsListen   string
	TLSCertFile, TLSKeyFile string
	UIDir, Origins          string
	LogLevel, LogFormat     string
	ShutdownTimeout         time.Duration
	// Storage and events. DatabaseURL is a secret: never logged.
	DatabaseURL, DatabaseURLFile string
	StatementTimeout             time.Duration
	ReportRetention              time.Duration
	NATSURL                      string
	NATS                         eventsv1.Credentials
	// Writes: the static admin token (WriteToken, read from WriteTokenFile
	// or the environment) or TokenReview with scopes.
	WriteToken, WriteTokenFile     string
	AuthMode, Audience, Kubeconfig string
	AllowedSAs, RematchSAs, ScanSA string
	VerifyTokens                   bool
	// Reads, metrics and triage.
	ReadAuth, ReadNamespaces           string
	ProxyUser, ProxyGroups, ProxyCIDRs string
	MetricsAuth                        string
	VulnInterval                       time.Duration
	VulnMaxNamespaces                  int
	Exceptions                         bool
	ExceptionMaxLifetime               time.Duration
	SLA                                string
	// What clients can make the server hold.
	MaxBOMBytes                     int64
	Limits                          httpapi.Limits
	MaxWSClients, MaxWSClientsPerIP int
}

// BindFlags registers every option on fs. A flag's default is its
// CROWSNEST_* environment variable when getenv has one (so --help shows what
// applies), else the built-in one; the command line wins over both.
func (o *Options) BindFlags(fs *flag.FlagSet, getenv func(string) string) {
	env := func(k, def string) string {
		if v := getenv(k); v != "" {
			return v
		}
		return def
	}
	fs.StringVar(&o.Listen, "listen", env("CROWSNEST_LISTEN", ":8080"), "address to serve HTTP on (env CROWSNEST_LISTEN)")
	fs.StringVar(&o.MetricsListen, "metrics-listen", env("CROWSNEST_METRICS_LISTEN", ""), "address to serve /metrics on, plain HTTP, instead of --listen (so an Ingress in front of the API never exposes it), e.g. :9090 (env CROWSNEST_METRICS_LISTEN)")
	fs.StringVar(&o.DatabaseURL, "database-url", "", "Postgres URL, postgres://user:pass@host/db (env CROWSNEST_DATABASE_URL; a secret, never logged)")
	fs.StringVar(&o.DatabaseURLFile, "database-url-file", env("CROWSNEST_DATABASE_URL_FILE", ""), "file holding the Postgres URL (env CROWSNEST_DATABASE_URL_FILE)")
	fs.StringVar(&o.NATSURL, "nats-url", env("CROWSNEST_NATS_URL", ""), "NATS URL; empty turns events off (env CROWSNEST_NATS_URL)")
	fs.StringVar(&o.NATS.User, "nats-user", env("CROWSNEST_NATS_USER", ""), "NATS user (the chart's bundled NATS: results-api), with --nats-password-file (env CROWSNEST_NATS_USER)")
	fs.StringVar(&o.NATS.PasswordFile, "nats-password-file", env("CROWSNEST_NATS_PASSWORD_FILE", ""), "file holding the NATS user's password (env CROWSNEST_NATS_PASSWORD_FILE)")
	fs.StringVar(&o.NATS.CredsFile, "nats-creds", env("CROWSNEST_NATS_CREDS", ""), "NATS .creds file (JWT and NKey seed), instead of user and password (env CROWSNEST_NATS_CREDS)")
	fs.StringVar(&o.NATS.NKeyFile, "nats-nkey-file", env("CROWSNEST_NATS_NKEY_FILE", ""), "file holding an NKey seed, instead of user and password (env CROWSNEST_NATS_NKEY_FILE)")
	adminFile := env("CROWSNEST_ADMIN_TOKEN_FILE", env("CROWSNEST_WRITE_TOKEN_FILE", ""))
	fs.StringVar(&o.WriteTokenFile, "admin-token-file", adminFile, "file holding the static admin token, allowed to PUT and DELETE in every --auth-mode (env CROWSNEST_ADMIN_TOKEN_FILE; or the token itself in CROWSNEST_ADMIN_TOKEN). Without one, static mode refuses writes")
	fs.StringVar(&o.WriteTokenFile, "write-token-file", adminFile, "alias of --admin-token-file (env CROWSNEST_WRITE_TOKEN_FILE, CROWSNEST_WRITE_TOKEN)")
	fs.Int64Var(&o.MaxBOMBytes, "max-bom-bytes", envInt(env("CROWSNEST_MAX_BOM_BYTES", ""), ingest.DefaultMaxBytes), "largest accepted BOM, decompressed (env CROWSNEST_MAX_BOM_BYTES)")
	fs.StringVar(&o.UIDir, "ui-dir", env("CROWSNEST_UI_DIR", ""), "serve the web UI from this directory instead of the embedded build (env CROWSNEST_UI_DIR)")
	fs.StringVar(&o.Origins, "allowed-origins", env("CROWSNEST_ALLOWED_ORIGINS", ""), "comma-separated extra Origin host patterns allowed on the WebSocket; same host is always allowed (env CROWSNEST_ALLOWED_ORIGINS)")
	fs.StringVar(&o.LogLevel, "log-level", env("CROWSNEST_LOG_LEVEL", "info"), "debug, info, warn or error (env CROWSNEST_LOG_LEVEL)")
	fs.StringVar(&o.LogFormat, "log-format", env("CROWSNEST_LOG_FORMAT", "json"), "log format: json or text (env CROWSNEST_LOG_FORMAT)")
	fs.StringVar(&o.AuthMode, "auth-mode", env("CROWSNEST_AUTH_MODE", "static"), "how write tokens are checked: static (the write token) or tokenreview (Kubernetes service-account tokens via TokenReview) (env CROWSNEST_AUTH_MODE)")
	fs.StringVar(&o.Audience, "token-audience", env("CROWSNEST_TOKEN_AUDIENCE", authn.DefaultAudience), "audience service-account tokens must carry in tokenreview mode (env CROWSNEST_TOKEN_AUDIENCE)")
	fs.StringVar(&o.AllowedSAs, "allowed-service-accounts", env("CROWSNEST_ALLOWED_SERVICE_ACCOUNTS", ""), "comma-separated namespace/name (or namespace/*, or */name for every namespace) service accounts allowed to write in tokenreview mode (env CROWSNEST_ALLOWED_SERVICE_ACCOUNTS)")
	fs.StringVar(&o.RematchSAs, "rematch-service-accounts", env("CROWSNEST_REMATCH_SERVICE_ACCOUNTS", ""), "comma-separated namespace/name service accounts (the matcher) that may replace existing reports in tokenreview mode (env CROWSNEST_REMATCH_SERVICE_ACCOUNTS)")
	fs.StringVar(&o.ScanSA, "scan-service-account", env("CROWSNEST_SCAN_SERVICE_ACCOUNT", ""), "service account scan Pods run as; uploads from Pods running as another are refused (empty: any) (env CROWSNEST_SCAN_SERVICE_ACCOUNT)")
	fs.StringVar(&o.TLSCertFile, "tls-cert-file", env("CROWSNEST_TLS_CERT_FILE", ""), "PEM certificate (chain) to serve HTTPS with, together with --tls-key-file; reloaded when the file changes; empty serves plain HTTP (env CROWSNEST_TLS_CERT_FILE)")
	fs.StringVar(&o.TLSKeyFile, "tls-key-file", env("CROWSNEST_TLS_KEY_FILE", ""), "PEM private key of --tls-cert-file (env CROWSNEST_TLS_KEY_FILE)")
	fs.BoolVar(&o.VerifyTokens, "verify-token-signatures", cli.EnvBool(env("CROWSNEST_VERIFY_TOKEN_SIGNATURES", ""), true), "verify service-account tokens' signatures, issuer, audience and expiry locally against the API server's issuer keys (its OIDC discovery, "+authn.JWKSPath+") before any TokenReview, so forged tokens never reach it; turn off only where results-api cannot read those keys (env CROWSNEST_VERIFY_TOKEN_SIGNATURES)")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", env("CROWSNEST_KUBECONFIG", ""), "kubeconfig for TokenReview; empty uses the in-cluster config (env CROWSNEST_KUBECONFIG)")
	fs.StringVar(&o.ReadAuth, "read-auth", env("CROWSNEST_READ_AUTH", "kubernetes"), "how reads are authorized: kubernetes (a bearer token for --token-audience verified by TokenReview, or --auth-proxy-* headers; SubjectAccessReview list on reports.crowsnest.dev, cluster-wide or per namespace) or open (anyone reads everything) (env CROWSNEST_READ_AUTH)")
	fs.StringVar(&o.ReadNamespaces, "read-auth-namespaces", env("CROWSNEST_READ_AUTH_NAMESPACES", "rbac"), "which namespaces --read-auth=kubernetes reviews (SubjectAccessReview) for a reader who may not list reports cluster-wide: rbac (only those where a RoleBinding names the reader, its groups or its ServiceAccount, from a watch of RoleBindings; needs list and watch on rolebindings) or all (every namespace of the inventory, one review each: for clusters where an authorizer other than RBAC grants reads) (env CROWSNEST_READ_AUTH_NAMESPACES)")
	fs.StringVar(&o.MetricsAuth, "metrics-auth", env("CROWSNEST_METRICS_AUTH", ""), "who may get /metrics, whose vulnerability metrics name every namespace: kubernetes (a bearer token checked by TokenReview for the API server's audiences, and a SubjectAccessReview for get on the non-resource URL /metrics, as the operator's; --metrics-listen then serves HTTPS, with --tls-cert-file's certificate or a self-signed one) or open; empty: as --read-auth (env CROWSNEST_METRICS_AUTH)")
	fs.StringVar(&o.ProxyUser, "auth-proxy-user-header", env("CROWSNEST_AUTH_PROXY_USER_HEADER", ""), "header holding the user an authenticating proxy vouches for (e.g. X-Remote-User); believed only from --auth-proxy-trusted-cidrs (env CROWSNEST_AUTH_PROXY_USER_HEADER)")
	fs.StringVar(&o.ProxyGroups, "auth-proxy-groups-header", env("CROWSNEST_AUTH_PROXY_GROUPS_HEADER", ""), "header holding the user's groups, comma-separated or repeated (e.g. X-Remote-Group) (env CROWSNEST_AUTH_PROXY_GROUPS_HEADER)")
	fs.StringVar(&o.ProxyCIDRs, "auth-proxy-trusted-cidrs", env("CROWSNEST_AUTH_PROXY_TRUSTED_CIDRS", ""), "comma-separated CIDRs the authenticating proxy connects from (e.g. 127.0.0.1/32 for a sidecar); identity headers from any other peer are ignored (env CROWSNEST_AUTH_PROXY_TRUSTED_CIDRS)")
	fs.DurationVar(&o.ReportRetention, "report-retention", envDurationZero(env("CROWSNEST_REPORT_RETENTION", ""), 720*time.Hour), "delete the reports of images no namespace has run for longer than this (by the operator's inventory; reports of images never seen running are kept); publishes no event; 0 keeps every report (env CROWSNEST_REPORT_RETENTION)")
	fs.DurationVar(&o.VulnInterval, "vuln-metrics-interval", envDurationZero(env("CROWSNEST_VULN_METRICS_INTERVAL", ""), vulnmetrics.DefaultInterval), "recompute the vulnerability metrics (crowsnest_vulnerabilities and kin) from the database this often, and about 2s after a report or inventory change this replica applies; 0 turns them off (env CROWSNEST_VULN_METRICS_INTERVAL)")
	fs.IntVar(&o.VulnMaxNamespaces, "vuln-metrics-max-namespaces", int(envInt(env("CROWSNEST_VULN_METRICS_MAX_NAMESPACES", ""), vulnmetrics.DefaultMaxNamespaces)), "namespaces crowsnest_namespace_vulnerabilities exports at most, those with the most critical+high findings; crowsnest_namespace_vulnerabilities_truncated counts the others (env CROWSNEST_VULN_METRICS_MAX_NAMESPACES)")
	fs.BoolVar(&o.Exceptions, "exceptions", cli.EnvBool(env("CROWSNEST_EXCEPTIONS", ""), false), "apply the cluster's triage decisions (VulnerabilityException, ClusterVulnerabilityException of crowsnest.dev) to reads: suppressed findings are marked and filtered, /reports/{digest}/vex and /exceptions/audit serve them; needs the CRDs and get, list and watch on them (env CROWSNEST_EXCEPTIONS)")
	fs.DurationVar(&o.ExceptionMaxLifetime, "exception-max-lifetime", envDuration(env("CROWSNEST_EXCEPTION_MAX_LIFETIME", ""), 90*24*time.Hour), "an exception whose expiresAt lies more than this after its creation never applies (admission cannot check it: Kubernetes CEL has no clock) (env CROWSNEST_EXCEPTION_MAX_LIFETIME)")
	fs.StringVar(&o.SLA, "sla", env("CROWSNEST_SLA", report.DefaultSLA), "remediation SLA: comma-separated severity=window (critical, high, medium, low, negligible, unknown; a severity left out has no deadline) and kev=window, counted from when a report first listed the finding in CISA KEV; a finding is overdue after the earlier deadline; windows in days (7d) or Go durations; none: no deadlines (env CROWSNEST_SLA)")
	o.bindLimitFlags(fs, env)
	fs.DurationVar(&o.ShutdownTimeout, "shutdown-timeout", envDuration(env("CROWSNEST_SHUTDOWN_TIMEOUT", ""), 20*time.Second), "time to finish requests on SIGTERM (env CROWSNEST_SHUTDOWN_TIMEOUT)")
}

// bindLimitFlags registers the flags that bound what clients can make the
// server hold: time per request, memory per budget, findings, database
// statement time and WebSocket clients.
func (o *Options) bindLimitFlags(fs *flag.FlagSet, env func(k, def string) string) {
	l := &o.Limits
	fs.DurationVar(&l.RequestTimeout, "request-timeout", envDuration(env("CROWSNEST_REQUEST_TIMEOUT", ""), httpapi.DefaultRequestTimeout), "read and write deadline of ordinary requests; it also cancels their database work (env CROWSNEST_REQUEST_TIMEOUT)")
	fs.DurationVar(&l.UploadTimeout, "upload-timeout", envDuration(env("CROWSNEST_UPLOAD_TIMEOUT", ""), httpapi.DefaultUploadTimeout), "deadline of a report upload: body, parse and store (env CROWSNEST_UPLOAD_TIMEOUT)")
	fs.DurationVar(&l.DownloadTimeout, "download-timeout", envDuration(env("CROWSNEST_DOWNLOAD_TIMEOUT", ""), httpapi.DefaultDownloadTimeout), "deadline of a BOM download (env CROWSNEST_DOWNLOAD_TIMEOUT)")
	fs.Int64Var(&l.IngestMemory, "ingest-memory-bytes", envInt(env("CROWSNEST_INGEST_MEMORY_BYTES", ""), httpapi.DefaultIngestMemory), "memory uploads in flight may hold together; an upload is charged its compressed bytes plus 4x its BOM size (env CROWSNEST_INGEST_MEMORY_BYTES)")
	fs.Int64Var(&l.ReadMemory, "read-memory-bytes", envInt(env("CROWSNEST_READ_MEMORY_BYTES", ""), httpapi.DefaultReadMemory), "memory BOM downloads and report details in flight may hold together (env CROWSNEST_READ_MEMORY_BYTES)")
	fs.DurationVar(&l.MemoryWait, "memory-wait", envDuration(env("CROWSNEST_MEMORY_WAIT", ""), httpapi.DefaultMemoryWait), "how long a request waits for memory before 503 with Retry-After (env CROWSNEST_MEMORY_WAIT)")
	fs.IntVar(&l.MaxFindings, "max-findings", int(envInt(env("CROWSNEST_MAX_FINDINGS", ""), ingest.DefaultMaxFindings)), "largest accepted number of findings per report; more is refused with 413 (env CROWSNEST_MAX_FINDINGS)")
	fs.DurationVar(&o.StatementTimeout, "statement-timeout", envDuration(env("CROWSNEST_STATEMENT_TIMEOUT", ""), store.DefaultStatementTimeout), "Postgres statement_timeout of every query; a timed-out request gets 503 (env CROWSNEST_STATEMENT_TIMEOUT)")
	fs.IntVar(&o.MaxWSClients, "max-websocket-clients", int(envInt(env("CROWSNEST_MAX_WEBSOCKET_CLIENTS", ""), hub.DefaultMaxClients)), "WebSocket clients served at once; more get 503 (env CROWSNEST_MAX_WEBSOCKET_CLIENTS)")
	fs.IntVar(&o.MaxWSClientsPerIP, "max-websocket-clients-per-ip", int(envInt(env("CROWSNEST_MAX_WEBSOCKET_CLIENTS_PER_IP", ""), hub.DefaultMaxClientsPerAddr)), "WebSocket clients per source address (behind a proxy: the proxy's); more get 429 (env CROWSNEST_MAX_WEBSOCKET_CLIENTS_PER_IP)")
}

// errNoDatabase says where a database URL comes from.
var errNoDatabase = errors.New("no database: set --database-url, CROWSNEST_DATABASE_URL or --database-url-file")

// parseFlags parses args over getenv's CROWSNEST_* defaults, validates the
// options and reads the secret files they name. --help and --version print
// to out and return an error wrapping flag.ErrHelp.
func parseFlags(args []string, getenv func(string) string, out io.Writer) (*Options, error) {
	o := &Options{}
	fs := flag.NewFlagSet("results-api", flag.ContinueOnError)
	fs.SetOutput(out)
	o.BindFlags(fs, getenv)
	version := fs.Bool("version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if *version {
		fmt.Fprintln(out, buildinfo.String("results-api"))
		return nil, errVersion
	}
	// Not the flag's default, so that --help never prints the secret.
	if o.DatabaseURL == "" {
		o.DatabaseURL = getenv("CROWSNEST_DATABASE_URL")
	}
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if err := o.loadSecrets(getenv); err != nil {
		return nil, err
	}
	return o, nil
}

// Validate returns the first invalid option, without I/O: the secret files,
// the NATS credentials and the Kubernetes connection are checked where they
// are used.
func (o *Options) Validate() error {
	if err := o.checkLimits(); err != nil {
		return err
	}
	if (o.TLSCertFile == "") != (o.TLSKeyFile == "") {
		return errors.New("--tls-cert-file and --tls-key-file go together: set both to serve HTTPS, or neither")
	}
	if o.DatabaseURL == "" && o.DatabaseURLFile == "" {
		return errNoDatabase
	}
	if _, err := cli.NewLogger(o.LogLevel, o.LogFormat, io.Discard); err != nil {
		return err
	}
	if _, err := report.ParseSLA(o.SLA); err != nil {
		return fmt.Errorf("--sla: %w", err)
	}
	switch o.AuthMode {
	case "static":
	case "tokenreview":
		if len(splitList(o.AllowedSAs)) == 0 {
			return errors.New("--auth-mode=tokenreview needs --allowed-service-accounts")
		}
	default:
		return fmt.Errorf("--auth-mode %q: want static or tokenreview", o.AuthMode)
	}
	switch o.ReadAuth {
	case "open":
	case "kubernetes":
		if o.ReadNamespaces != "rbac" && o.ReadNamespaces != "all" {
			return fmt.Errorf("--read-auth-namespaces %q: want rbac or all", o.ReadNamespaces)
		}
		if o.ProxyUser != "" {
			if _, err := trustedProxies(o.ProxyCIDRs); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("--read-auth %q: want kubernetes or open", o.ReadAuth)
	}
	if m := metricsAuthMode(o); m != "open" && m != "kubernetes" {
		return fmt.Errorf("--metrics-auth %q: want kubernetes or open", o.MetricsAuth)
	}
	return nil
}

// checkLimits refuses limits that would turn a protection off.
func (o *Options) checkLimits() error {
	l := o.Limits
	for name, v := range map[string]int64{"request-timeout": int64(l.RequestTimeout), "upload-timeout": int64(l.UploadTimeout),
		"download-timeout": int64(l.DownloadTimeout), "ingest-memory-bytes": l.IngestMemory, "read-memory-bytes": l.ReadMemory,
		"memory-wait": int64(l.MemoryWait), "max-findings": int64(l.MaxFindings), "statement-timeout": int64(o.StatementTimeout),
		"max-websocket-clients": int64(o.MaxWSClients), "max-websocket-clients-per-ip": int64(o.MaxWSClientsPerIP),
		"max-bom-bytes": o.MaxBOMBytes, "vuln-metrics-max-namespaces": int64(o.VulnMaxNamespaces)} {
		if v <= 0 {
			return fmt.Errorf("--%s must be positive", name)
		}
	}
	return nil
}

// loadSecrets reads the database URL from --database-url-file unless
// --database-url or CROWSNEST_DATABASE_URL gave one, and the admin token
// from --admin-token-file, else from CROWSNEST_ADMIN_TOKEN or
// CROWSNEST_WRITE_TOKEN.
func (o *Options) loadSecrets(getenv func(string) string) error {
	var err error
	if o.DatabaseURL == "" && o.DatabaseURLFile != "" {
		if o.DatabaseURL, err = readSecret(o.DatabaseURLFile); err != nil {
			return err
		}
	}
	if o.DatabaseURL == "" {
		return errNoDatabase
	}
	o.WriteToken = getenv("CROWSNEST_ADMIN_TOKEN")
	if o.WriteToken == "" {
		o.WriteToken = getenv("CROWSNEST_WRITE_TOKEN")
	}
	if o.WriteTokenFile != "" {
		if o.WriteToken, err = readSecret(o.WriteTokenFile); err != nil {
			return err
		}
	}
	return nil
}
