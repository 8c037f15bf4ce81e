package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/crowsnest-dev/crowsnest/api/cli"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	"github.com/crowsnest-dev/crowsnest/matcher/internal/dbserve"
	"github.com/crowsnest-dev/crowsnest/matcher/internal/vulndb"
)

// DefaultDataDir is where the DB volume is mounted unless told otherwise.
const DefaultDataDir = "/var/lib/crowsnest/matcher"

// Options are `matcher serve`'s configuration: every field is a flag, and
// every flag takes its default from a CROWSNEST_* environment variable.
// parseServe fills and validates them; serve wires the matcher from them.
// (`matcher db import` and `db status` bind a few of the same flags.)
type Options struct {
	Listen, DataDir, UpstreamURL string
	AdminTokenFile, LogLevel     string
	LogFormat                    string
	CheckInterval                time.Duration
	ListingTimeout               time.Duration
	DownloadTimeout              time.Duration
	ShutdownTimeout              time.Duration
	MaxArchiveBytes, MaxDBBytes  int64
	ImportTimeout                time.Duration
	AllowInsecureUpstream        bool
	Metrics                      bool

	// Re-match (off without a results-api URL and token file).
	ResultsAPIURL, ResultsAPITokenFile string
	RematchConcurrency                 int
	RematchSkip                        bool
	RematchSkipCheck                   float64
	RematchSkipCheckMax                int
	// Events (off without a NATS URL).
	NATSURL string
	NATS    eventsv1.Credentials
}

type envFunc func(key, def string) string

func envLookup(getenv func(string) string) envFunc {
	return func(k, def string) string {
		if v := getenv(k); v != "" {
			return v
		}
		return def
	}
}

// BindFlags registers every option on fs. A flag's default is its
// CROWSNEST_* environment variable when getenv has one (so --help shows what
// applies), else the built-in one; the command line wins over both.
func (o *Options) BindFlags(fs *flag.FlagSet, getenv func(string) string) {
	env := envLookup(getenv)
	fs.StringVar(&o.Listen, "listen", env("CROWSNEST_LISTEN", ":8080"), "address to serve HTTP on (env CROWSNEST_LISTEN)")
	bindDataDir(fs, &o.DataDir, env)
	fs.StringVar(&o.UpstreamURL, "upstream-url", env("CROWSNEST_UPSTREAM_URL", vulndb.DefaultUpstreamURL),
		"Grype DB update URL to fetch from (listing at URL/v6/latest.json, or a URL ending in .json); \"off\" fetches nothing (air gap) (env CROWSNEST_UPSTREAM_URL)")
	fs.BoolVar(&o.AllowInsecureUpstream, "allow-insecure-upstream", cli.EnvBool(env("CROWSNEST_ALLOW_INSECURE_UPSTREAM", ""), false),
		"accept a plain http:// --upstream-url (a mirror on a trusted network, tests); anyone on the path can then choose the DB (env CROWSNEST_ALLOW_INSECURE_UPSTREAM)")
	fs.DurationVar(&o.CheckInterval, "check-interval", cli.EnvDuration(env("CROWSNEST_CHECK_INTERVAL", ""), 6*time.Hour), "time between checks of the upstream listing (env CROWSNEST_CHECK_INTERVAL)")
	fs.DurationVar(&o.ListingTimeout, "listing-timeout", cli.EnvDuration(env("CROWSNEST_LISTING_TIMEOUT", ""), 30*time.Second), "deadline of a listing request (env CROWSNEST_LISTING_TIMEOUT)")
	fs.DurationVar(&o.DownloadTimeout, "download-timeout", cli.EnvDuration(env("CROWSNEST_DOWNLOAD_TIMEOUT", ""), 10*time.Minute), "deadline of a DB archive download (env CROWSNEST_DOWNLOAD_TIMEOUT)")
	bindLimits(fs, &o.MaxArchiveBytes, &o.MaxDBBytes, &o.ImportTimeout, env)
	fs.StringVar(&o.AdminTokenFile, "admin-token-file", env("CROWSNEST_ADMIN_TOKEN_FILE", ""),
		"file holding the admin token allowed to upload DB archives (POST "+dbserve.ImportPath+"); without one, uploads are refused (env CROWSNEST_ADMIN_TOKEN_FILE)")
	fs.BoolVar(&o.Metrics, "metrics", cli.EnvBool(env("CROWSNEST_METRICS", ""), true), "serve Prometheus metrics at /metrics (env CROWSNEST_METRICS)")
	fs.StringVar(&o.LogLevel, "log-level", env("CROWSNEST_LOG_LEVEL", "info"), "debug, info, warn or error (env CROWSNEST_LOG_LEVEL)")
	fs.StringVar(&o.LogFormat, "log-format", env("CROWSNEST_LOG_FORMAT", "json"), "log format: json or text (env CROWSNEST_LOG_FORMAT)")
	o.bindRematchFlags(fs, env)
	fs.DurationVar(&o.ShutdownTimeout, "shutdown-timeout", cli.EnvDuration(env("CROWSNEST_SHUTDOWN_TIMEOUT", ""), 20*time.Second), "time to finish downloads in flight and stop a re-match pass on SIGTERM (env CROWSNEST_SHUTDOWN_TIMEOUT)")
}

func (o *Options) bindRematchFlags(fs *flag.FlagSet, env envFunc) {
	fs.StringVar(&o.ResultsAPIURL, "results-api-url", env("CROWSNEST_RESULTS_API_URL", ""),
		"results-api base URL whose stored reports are re-matched when the DB changes, e.g. http://crowsnest-results-api:8080; empty turns re-matching off (env CROWSNEST_RESULTS_API_URL)")
	fs.StringVar(&o.ResultsAPITokenFile, "results-api-token-file", env("CROWSNEST_RESULTS_API_TOKEN_FILE", ""),
		"file holding the bearer token for results-api with the rematch scope (the matcher's projected service-account token), read on every request; empty turns re-matching off (env CROWSNEST_RESULTS_API_TOKEN_FILE)")
	fs.IntVar(&o.RematchConcurrency, "rematch-concurrency", int(cli.EnvInt(env("CROWSNEST_REMATCH_CONCURRENCY", ""), 2)),
		"reports re-matched at once (env CROWSNEST_REMATCH_CONCURRENCY)")
	fs.BoolVar(&o.RematchSkip, "rematch-skip", cli.EnvBool(env("CROWSNEST_REMATCH_SKIP", ""), true),
		"skip re-matching the reports a DB update cannot change (their recorded lookups meet no row that changed since the previous DB); false matches every report (env CROWSNEST_REMATCH_SKIP)")
	fs.Float64Var(&o.RematchSkipCheck, "rematch-skip-check", envFloat(env("CROWSNEST_REMATCH_SKIP_CHECK", ""), 0.02),
		"fraction of the reports a pass would skip that it matches in full anyway to check the skip (and the first one always); a mismatch counts in crowsnest_rematch_skip_mismatch_total (env CROWSNEST_REMATCH_SKIP_CHECK)")
	fs.IntVar(&o.RematchSkipCheckMax, "rematch-skip-check-max", int(cli.EnvInt(env("CROWSNEST_REMATCH_SKIP_CHECK_MAX", ""), 50)),
		"most reports a pass matches in full for the skip check, the first one aside (at 2-3 reports/s, 50 take ~20 s); 0: no cap (env CROWSNEST_REMATCH_SKIP_CHECK_MAX)")
	fs.StringVar(&o.NATSURL, "nats-url", env("CROWSNEST_NATS_URL", ""), "NATS URL for events, e.g. nats://nats:4222; empty turns events off (env CROWSNEST_NATS_URL)")
	fs.StringVar(&o.NATS.User, "nats-user", env("CROWSNEST_NATS_USER", ""), "NATS user (the chart's bundled NATS: matcher), with --nats-password-file (env CROWSNEST_NATS_USER)")
	fs.StringVar(&o.NATS.PasswordFile, "nats-password-file", env("CROWSNEST_NATS_PASSWORD_FILE", ""), "file holding the NATS user's password (env CROWSNEST_NATS_PASSWORD_FILE)")
	fs.StringVar(&o.NATS.CredsFile, "nats-creds", env("CROWSNEST_NATS_CREDS", ""), "NATS .creds file (JWT and NKey seed), instead of user and password (env CROWSNEST_NATS_CREDS)")
	fs.StringVar(&o.NATS.NKeyFile, "nats-nkey-file", env("CROWSNEST_NATS_NKEY_FILE", ""), "file holding an NKey seed, instead of user and password (env CROWSNEST_NATS_NKEY_FILE)")
}

func bindDataDir(fs *flag.FlagSet, dir *string, env envFunc) {
	fs.StringVar(dir, "data-dir", env("CROWSNEST_DATA_DIR", DefaultDataDir), "directory (volume) holding the vulnerability DBs (env CROWSNEST_DATA_DIR)")
}

func bindLimits(fs *flag.FlagSet, archive, db *int64, timeout *time.Duration, env envFunc) {
	fs.Int64Var(archive, "max-archive-bytes", cli.EnvInt(env("CROWSNEST_MAX_ARCHIVE_BYTES", ""), 2<<30), "largest DB archive accepted, downloaded or uploaded (env CROWSNEST_MAX_ARCHIVE_BYTES)")
	fs.Int64Var(db, "max-db-bytes", cli.EnvInt(env("CROWSNEST_MAX_DB_BYTES", ""), 8<<30),
		"largest unpacked vulnerability.db accepted; the whole archive may unpack to 16 MiB more, skipped entries included (env CROWSNEST_MAX_DB_BYTES)")
	fs.DurationVar(timeout, "import-timeout", cli.EnvDuration(env("CROWSNEST_IMPORT_TIMEOUT", ""), 30*time.Minute),
		"deadline of one import (unpack, checks, indexes, activation), after the download or upload (env CROWSNEST_IMPORT_TIMEOUT)")
}

// parseServe parses `matcher serve`'s args over getenv's CROWSNEST_*
// defaults and validates them; -h prints to out and returns flag.ErrHelp.
func parseServe(args []string, getenv func(string) string, out io.Writer) (Options, error) {
	var o Options
	fs := flag.NewFlagSet("matcher serve", flag.ContinueOnError)
	fs.SetOutput(out)
	o.BindFlags(fs, getenv)
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.UpstreamURL == "off" {
		o.UpstreamURL = ""
	}
	if err := o.Validate(); err != nil {
		return o, err
	}
	o.ResultsAPIURL = strings.TrimRight(o.ResultsAPIURL, "/")
	return o, nil
}

// Validate returns the first invalid option, without I/O: the admin token
// file, the NATS credentials and the data directory are checked where they
// are used. An empty --upstream-url ("off" once parsed) fetches nothing.
func (o *Options) Validate() error {
	if o.UpstreamURL != "" {
		err := vulndb.CheckUpstreamURL(o.UpstreamURL, o.AllowInsecureUpstream)
		if errors.Is(err, vulndb.ErrInsecureUpstream) {
			return fmt.Errorf("--upstream-url: %w (pass --allow-insecure-upstream for a mirror on a trusted network)", err)
		}
		if err != nil {
			return fmt.Errorf("--upstream-url: %w", err)
		}
	}
	if o.ResultsAPIURL != "" {
		u, err := url.Parse(o.ResultsAPIURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("--results-api-url %q: want an http or https URL", vulndb.Redact(o.ResultsAPIURL))
		}
	}
	for name, v := range map[string]int64{"check-interval": int64(o.CheckInterval), "listing-timeout": int64(o.ListingTimeout),
		"download-timeout": int64(o.DownloadTimeout), "shutdown-timeout": int64(o.ShutdownTimeout), "import-timeout": int64(o.ImportTimeout),
		"max-archive-bytes": o.MaxArchiveBytes, "max-db-bytes": o.MaxDBBytes, "rematch-concurrency": int64(o.RematchConcurrency)} {
		if v <= 0 {
			return fmt.Errorf("--%s must be positive", name)
		}
	}
	if o.RematchSkipCheck < 0 || o.RematchSkipCheck > 1 {
		return fmt.Errorf("--rematch-skip-check %v: want a fraction in [0, 1]", o.RematchSkipCheck)
	}
	if o.RematchSkipCheckMax < 0 {
		return fmt.Errorf("--rematch-skip-check-max %d: want 0 (no cap) or more", o.RematchSkipCheckMax)
	}
	_, err := cli.NewLogger(o.LogLevel, o.LogFormat, io.Discard)
	return err
}

// envFloat parses s, or returns def when s is empty or not a number in
// [0, 1].
func envFloat(s string, def float64) float64 {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 || v > 1 {
		return def
	}
	return v
}
