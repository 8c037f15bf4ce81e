package main

import (
	"flag"
	"testing"
)

// validOptions are the built-in defaults with a database: valid.
func validOptions(t *testing.T) Options {
	t.Helper()
	var o Options
	o.BindFlags(flag.NewFlagSet("x", flag.ContinueOnError), envMap(nil))
	o.DatabaseURL = "postgres://db"
	return o
}

// TestValidate: each invalid option, alone on valid defaults, is refused
// with its message; the defaults and the valid alternatives pass.
func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*Options)
		want   string // "" for valid
	}{
		{"defaults", func(*Options) {}, ""},
		{"database from file", func(o *Options) { o.DatabaseURL, o.DatabaseURLFile = "", "/run/db" }, ""},
		{"tokenreview with writers", func(o *Options) { o.AuthMode, o.AllowedSAs = "tokenreview", "ns/sa" }, ""},
		{"open reads", func(o *Options) { o.ReadAuth, o.ReadNamespaces = "open", "bogus" }, ""},
		{"all namespaces, proxy", func(o *Options) { o.ReadNamespaces, o.ProxyUser, o.ProxyCIDRs = "all", "X-User", "127.0.0.1/32" }, ""},
		{"tls pair", func(o *Options) { o.TLSCertFile, o.TLSKeyFile = "c", "k" }, ""},
		{"no sla", func(o *Options) { o.SLA = "none" }, ""},
		{"request timeout", func(o *Options) { o.Limits.RequestTimeout = 0 }, "--request-timeout must be positive"},
		{"upload timeout", func(o *Options) { o.Limits.UploadTimeout = -1 }, "--upload-timeout must be positive"},
		{"download timeout", func(o *Options) { o.Limits.DownloadTimeout = 0 }, "--download-timeout must be positive"},
		{"ingest memory", func(o *Options) { o.Limits.IngestMemory = 0 }, "--ingest-memory-bytes must be positive"},
		{"read memory", func(o *Options) { o.Limits.ReadMemory = 0 }, "--read-memory-bytes must be positive"},
		{"memory wait", func(o *Options) { o.Limits.MemoryWait = 0 }, "--memory-wait must be positive"},
		{"max findings", func(o *Options) { o.Limits.MaxFindings = 0 }, "--max-findings must be positive"},
		{"statement timeout", func(o *Options) { o.StatementTimeout = 0 }, "--statement-timeout must be positive"},
		{"websocket clients", func(o *Options) { o.MaxWSClients = 0 }, "--max-websocket-clients must be positive"},
		{"websocket clients per ip", func(o *Options) { o.MaxWSClientsPerIP = 0 }, "--max-websocket-clients-per-ip must be positive"},
		{"bom bytes", func(o *Options) { o.MaxBOMBytes = 0 }, "--max-bom-bytes must be positive"},
		{"metrics namespaces", func(o *Options) { o.VulnMaxNamespaces = 0 }, "--vuln-metrics-max-namespaces must be positive"},
		{"cert without key", func(o *Options) { o.TLSCertFile = "c" }, "--tls-cert-file and --tls-key-file go together: set both to serve HTTPS, or neither"},
		{"key without cert", func(o *Options) { o.TLSKeyFile = "k" }, "--tls-cert-file and --tls-key-file go together: set both to serve HTTPS, or neither"},
		{"no database", func(o *Options) { o.DatabaseURL = "" }, "no database: set --database-url, CROWSNEST_DATABASE_URL or --database-url-file"},
		{"log level", func(o *Options) { o.LogLevel = "loud" }, `--log-level: slog: level string "loud": unknown name`},
		{"log format", func(o *Options) { o.LogFormat = "logfmt" }, `--log-format "logfmt": want json or text`},
		{"sla", func(o *Options) { o.SLA = "critical" }, `--sla: sla "critical": want key=duration, such as critical=7d`},
		{"auth mode", func(o *Options) { o.AuthMode = "bogus" }, `--auth-mode "bogus": want static or tokenreview`},
		{"tokenreview without writers", func(o *Options) { o.AuthMode, o.AllowedSAs = "tokenreview", " , " }, "--auth-mode=tokenreview needs --allowed-service-accounts"},
		{"read auth", func(o *Options) { o.ReadAuth = "bogus" }, `--read-auth "bogus": want kubernetes or open`},
		{"read namespaces", func(o *Options) { o.ReadNamespaces = "some" }, `--read-auth-namespaces "some": want rbac or all`},
		{"proxy without cidrs", func(o *Options) { o.ProxyUser = "X-User" },
			"--auth-proxy-user-header needs --auth-proxy-trusted-cidrs: headers from any peer would be believed"},
		{"proxy cidr", func(o *Options) { o.ProxyUser, o.ProxyCIDRs = "X-User", "10.0.0.0/33" },
			`--auth-proxy-trusted-cidrs: netip.ParsePrefix("10.0.0.0/33"): prefix length out of range`},
		{"metrics auth", func(o *Options) { o.MetricsAuth = "bogus" }, `--metrics-auth "bogus": want kubernetes or open`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := validOptions(t)
			tc.change(&o)
			err := o.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || err.Error() != tc.want):
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}
