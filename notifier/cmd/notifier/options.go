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

// Options are the notifier's configuration: every field is a flag, and
// every flag but --version takes its default from a CROWSNEST_* environment
// variable. parse fills and validates them; run wires the notifier from
// them.
type Options struct {
	Config, DashboardURL, Listen, LogLevel string
	LogFormat, NATSURL, Consumer           string
	NATS                                   eventsv1.Credentials
	StateMaxBytes                          int64
	NotifyMaxAge                           time.Duration
	MinBackoff, MaxBackoff                 time.Duration
	DryRun, CheckConfig, Version           bool
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
	fs.StringVar(&o.Config, "config", env("CROWSNEST_CONFIG", "/etc/crowsnest/notifier/config.yaml"), "YAML file of receivers and routes (see docs/notifications.md) (env CROWSNEST_CONFIG)")
	fs.BoolVar(&o.CheckConfig, "check-config", cli.EnvBool(env("CROWSNEST_CHECK_CONFIG", ""), false), "check the configuration and its secret files, then exit (env CROWSNEST_CHECK_CONFIG)")
	fs.StringVar(&o.DashboardURL, "dashboard-url", env("CROWSNEST_DASHBOARD_URL", ""), "dashboard base URL for links, e.g. https://crowsnest.example.com; an image links to URL/images/<digest> (env CROWSNEST_DASHBOARD_URL)")
	fs.StringVar(&o.Listen, "listen", env("CROWSNEST_LISTEN", ":8080"), "address serving /metrics, /healthz and /readyz (env CROWSNEST_LISTEN)")
	fs.StringVar(&o.NATSURL, "nats-url", env("CROWSNEST_NATS_URL", "nats://127.0.0.1:4222"), "NATS URL (env CROWSNEST_NATS_URL)")
	fs.StringVar(&o.NATS.User, "nats-user", env("CROWSNEST_NATS_USER", ""), "NATS user (the chart's bundled NATS: notifier), with --nats-password-file (env CROWSNEST_NATS_USER)")
	fs.StringVar(&o.NATS.PasswordFile, "nats-password-file", env("CROWSNEST_NATS_PASSWORD_FILE", ""), "file holding the NATS user's password (env CROWSNEST_NATS_PASSWORD_FILE)")
	fs.StringVar(&o.NATS.CredsFile, "nats-creds", env("CROWSNEST_NATS_CREDS", ""), "NATS .creds file (JWT and NKey seed), instead of user and password (env CROWSNEST_NATS_CREDS)")
	fs.StringVar(&o.NATS.NKeyFile, "nats-nkey-file", env("CROWSNEST_NATS_NKEY_FILE", ""), "file holding an NKey seed, instead of user and password (env CROWSNEST_NATS_NKEY_FILE)")
	fs.StringVar(&o.Consumer, "consumer", env("CROWSNEST_CONSUMER", "notifier"), "durable JetStream consumer name (env CROWSNEST_CONSUMER)")
	fs.Int64Var(&o.StateMaxBytes, "state-max-bytes", cli.EnvInt(env("CROWSNEST_STATE_MAX_BYTES", ""), 256<<20), "size limit of the KeyValue bucket "+"crowsnest-notifier"+" (env CROWSNEST_STATE_MAX_BYTES)")
	fs.DurationVar(&o.NotifyMaxAge, "notify-max-age", cli.EnvDuration(env("CROWSNEST_NOTIFY_MAX_AGE", ""), time.Hour), "older events update the state but notify nobody (the stream's history at a first start) (env CROWSNEST_NOTIFY_MAX_AGE)")
	fs.DurationVar(&o.MinBackoff, "retry-min-backoff", cli.EnvDuration(env("CROWSNEST_RETRY_MIN_BACKOFF", ""), time.Second), "wait before the first retry of a failed delivery, doubled per attempt (env CROWSNEST_RETRY_MIN_BACKOFF)")
	fs.DurationVar(&o.MaxBackoff, "retry-max-backoff", cli.EnvDuration(env("CROWSNEST_RETRY_MAX_BACKOFF", ""), 5*time.Minute), "longest wait between delivery attempts (env CROWSNEST_RETRY_MAX_BACKOFF)")
	fs.BoolVar(&o.DryRun, "dry-run", cli.EnvBool(env("CROWSNEST_DRY_RUN", ""), false), "print every request to stdout instead of sending it (state is still kept: do not run it beside the real notifier) (env CROWSNEST_DRY_RUN)")
	fs.StringVar(&o.LogLevel, "log-level", env("CROWSNEST_LOG_LEVEL", "info"), "debug, info, warn or error (env CROWSNEST_LOG_LEVEL)")
	fs.StringVar(&o.LogFormat, "log-format", env("CROWSNEST_LOG_FORMAT", "json"), "log format: json or text (env CROWSNEST_LOG_FORMAT)")
	fs.BoolVar(&o.Version, "version", false, "print the version and exit")
}

// parse parses args over getenv's CROWSNEST_* defaults and validates them
// (but for --version); -h prints to out and returns flag.ErrHelp.
func parse(args []string, getenv func(string) string, out io.Writer) (Options, error) {
	var o Options
	fs := flag.NewFlagSet("notifier", flag.ContinueOnError)
	fs.SetOutput(out)
	o.BindFlags(fs, getenv)
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.Version {
		return o, nil
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return o, o.Validate()
}

// Validate returns the first invalid option, without I/O: the configuration
// file and the NATS credentials are checked where they are used.
func (o *Options) Validate() error {
	if o.DashboardURL != "" {
		u, err := url.Parse(o.DashboardURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("--dashboard-url %q: want an http or https URL", o.DashboardURL)
		}
	}
	for name, v := range map[string]int64{"state-max-bytes": o.StateMaxBytes, "notify-max-age": int64(o.NotifyMaxAge),
		"retry-min-backoff": int64(o.MinBackoff), "retry-max-backoff": int64(o.MaxBackoff)} {
		if v <= 0 {
			return fmt.Errorf("--%s must be positive", name)
		}
	}
	if o.Consumer == "" {
		return fmt.Errorf("--consumer must not be empty")
	}
	_, err := cli.NewLogger(o.LogLevel, o.LogFormat, io.Discard)
	return err
}
