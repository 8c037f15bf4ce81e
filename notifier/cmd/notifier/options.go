package main

import (
	"flag"
	"fmt"
	"io"
	"net/url"
	"time"

	"github.com/crowsnest-dev/crowsnest/api/cli"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
)

// options are the notifier's flags; each has a CROWSNEST_* default.
type options struct {
	config, dashboardURL, listen, logLevel string
	logFormat, natsURL, consumer           string
	nats                                   eventsv1.Credentials
	stateMaxBytes                          int64
	notifyMaxAge                           time.Duration
	minBackoff, maxBackoff                 time.Duration
	dryRun, checkConfig, version           bool
}

func parse(args []string, getenv func(string) string, out io.Writer) (options, error) {
	env := func(k, def string) string {
		if v := getenv(k); v != "" {
			return v
		}
		return def
	}
	var o options
	fs := flag.NewFlagSet("notifier", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&o.config, "config", env("CROWSNEST_CONFIG", "/etc/crowsnest/notifier/config.yaml"), "YAML file of receivers and routes (see docs/notifications.md) (env CROWSNEST_CONFIG)")
	fs.BoolVar(&o.checkConfig, "check-config", cli.EnvBool(env("CROWSNEST_CHECK_CONFIG", ""), false), "check the configuration and its secret files, then exit (env CROWSNEST_CHECK_CONFIG)")
	fs.StringVar(&o.dashboardURL, "dashboard-url", env("CROWSNEST_DASHBOARD_URL", ""), "dashboard base URL for links, e.g. https://crowsnest.example.com; an image links to URL/images/<digest> (env CROWSNEST_DASHBOARD_URL)")
	fs.StringVar(&o.listen, "listen", env("CROWSNEST_LISTEN", ":8080"), "address serving /metrics, /healthz and /readyz (env CROWSNEST_LISTEN)")
	fs.StringVar(&o.natsURL, "nats-url", env("CROWSNEST_NATS_URL", "nats://127.0.0.1:4222"), "NATS URL (env CROWSNEST_NATS_URL)")
	fs.StringVar(&o.nats.User, "nats-user", env("CROWSNEST_NATS_USER", ""), "NATS user (the chart's bundled NATS: notifier), with --nats-password-file (env CROWSNEST_NATS_USER)")
	fs.StringVar(&o.nats.PasswordFile, "nats-password-file", env("CROWSNEST_NATS_PASSWORD_FILE", ""), "file holding the NATS user's password (env CROWSNEST_NATS_PASSWORD_FILE)")
	fs.StringVar(&o.nats.CredsFile, "nats-creds", env("CROWSNEST_NATS_CREDS", ""), "NATS .creds file (JWT and NKey seed), instead of user and password (env CROWSNEST_NATS_CREDS)")
	fs.StringVar(&o.nats.NKeyFile, "nats-nkey-file", env("CROWSNEST_NATS_NKEY_FILE", ""), "file holding an NKey seed, instead of user and password (env CROWSNEST_NATS_NKEY_FILE)")
	fs.StringVar(&o.consumer, "consumer", env("CROWSNEST_CONSUMER", "notifier"), "durable JetStream consumer name (env CROWSNEST_CONSUMER)")
	fs.Int64Var(&o.stateMaxBytes, "state-max-bytes", cli.EnvInt(env("CROWSNEST_STATE_MAX_BYTES", ""), 256<<20), "size limit of the KeyValue bucket "+"crowsnest-notifier"+" (env CROWSNEST_STATE_MAX_BYTES)")
	fs.DurationVar(&o.notifyMaxAge, "notify-max-age", cli.EnvDuration(env("CROWSNEST_NOTIFY_MAX_AGE", ""), time.Hour), "older events update the state but notify nobody (the stream's history at a first start) (env CROWSNEST_NOTIFY_MAX_AGE)")
	fs.DurationVar(&o.minBackoff, "retry-min-backoff", cli.EnvDuration(env("CROWSNEST_RETRY_MIN_BACKOFF", ""), time.Second), "wait before the first retry of a failed delivery, doubled per attempt (env CROWSNEST_RETRY_MIN_BACKOFF)")
	fs.DurationVar(&o.maxBackoff, "retry-max-backoff", cli.EnvDuration(env("CROWSNEST_RETRY_MAX_BACKOFF", ""), 5*time.Minute), "longest wait between delivery attempts (env CROWSNEST_RETRY_MAX_BACKOFF)")
	fs.BoolVar(&o.dryRun, "dry-run", cli.EnvBool(env("CROWSNEST_DRY_RUN", ""), false), "print every request to stdout instead of sending it (state is still kept: do not run it beside the real notifier) (env CROWSNEST_DRY_RUN)")
	fs.StringVar(&o.logLevel, "log-level", env("CROWSNEST_LOG_LEVEL", "info"), "debug, info, warn or error (env CROWSNEST_LOG_LEVEL)")
	fs.StringVar(&o.logFormat, "log-format", env("CROWSNEST_LOG_FORMAT", "json"), "log format: json or text (env CROWSNEST_LOG_FORMAT)")
	fs.BoolVar(&o.version, "version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.version {
		return o, nil
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.dashboardURL != "" {
		u, err := url.Parse(o.dashboardURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return o, fmt.Errorf("--dashboard-url %q: want an http or https URL", o.dashboardURL)
		}
	}
	for name, v := range map[string]int64{"state-max-bytes": o.stateMaxBytes, "notify-max-age": int64(o.notifyMaxAge),
		"retry-min-backoff": int64(o.minBackoff), "retry-max-backoff": int64(o.maxBackoff)} {
		if v <= 0 {
			return o, fmt.Errorf("--%s must be positive", name)
		}
	}
	if o.consumer == "" {
		return o, fmt.Errorf("--consumer must not be empty")
	}
	return o, nil
}
