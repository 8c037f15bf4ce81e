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

// serveOptions are `matcher serve`'s flags; each has a CROWSNEST_* default.
type serveOptions struct {
	listen, dataDir, upstreamURL string
	adminTokenFile, logLevel     string
	logFormat                    string
	checkInterval                time.Duration
	listingTimeout               time.Duration
	downloadTimeout              time.Duration
	shutdownTimeout              time.Duration
	maxArchiveBytes, maxDBBytes  int64
	importTimeout                time.Duration
	allowInsecureUpstream        bool
	metrics                      bool

	// Re-match (off without a results-api URL and token file).
	resultsAPIURL, resultsAPITokenFile string
	rematchConcurrency                 int
	rematchSkip                        bool
	rematchSkipCheck                   float64
	// Events (off without a NATS URL).
	natsURL string
	nats    eventsv1.Credentials
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

// bindServeFlags registers `matcher serve`'s flags on fs.
func bindServeFlags(fs *flag.FlagSet, o *serveOptions, env envFunc) {
	fs.StringVar(&o.listen, "listen", env("CROWSNEST_LISTEN", ":8080"), "address to serve HTTP on (env CROWSNEST_LISTEN)")
	bindDataDir(fs, &o.dataDir, env)
	fs.StringVar(&o.upstreamURL, "upstream-url", env("CROWSNEST_UPSTREAM_URL", vulndb.DefaultUpstreamURL),
		"Grype DB update URL to fetch from (listing at URL/v6/latest.json, or a URL ending in .json); \"off\" fetches nothing (air gap) (env CROWSNEST_UPSTREAM_URL)")
	fs.BoolVar(&o.allowInsecureUpstream, "allow-insecure-upstream", cli.EnvBool(env("CROWSNEST_ALLOW_INSECURE_UPSTREAM", ""), false),
		"accept a plain http:// --upstream-url (a mirror on a trusted network, tests); anyone on the path can then choose the DB (env CROWSNEST_ALLOW_INSECURE_UPSTREAM)")
	fs.DurationVar(&o.checkInterval, "check-interval", cli.EnvDuration(env("CROWSNEST_CHECK_INTERVAL", ""), 6*time.Hour), "time between checks of the upstream listing (env CROWSNEST_CHECK_INTERVAL)")
	fs.DurationVar(&o.listingTimeout, "listing-timeout", cli.EnvDuration(env("CROWSNEST_LISTING_TIMEOUT", ""), 30*time.Second), "deadline of a listing request (env CROWSNEST_LISTING_TIMEOUT)")
	fs.DurationVar(&o.downloadTimeout, "download-timeout", cli.EnvDuration(env("CROWSNEST_DOWNLOAD_TIMEOUT", ""), 10*time.Minute), "deadline of a DB archive download (env CROWSNEST_DOWNLOAD_TIMEOUT)")
	bindLimits(fs, &o.maxArchiveBytes, &o.maxDBBytes, &o.importTimeout, env)
	fs.StringVar(&o.adminTokenFile, "admin-token-file", env("CROWSNEST_ADMIN_TOKEN_FILE", ""),
		"file holding the admin token allowed to upload DB archives (POST "+dbserve.ImportPath+"); without one, uploads are refused (env CROWSNEST_ADMIN_TOKEN_FILE)")
	fs.BoolVar(&o.metrics, "metrics", cli.EnvBool(env("CROWSNEST_METRICS", ""), true), "serve Prometheus metrics at /metrics (env CROWSNEST_METRICS)")
	fs.StringVar(&o.logLevel, "log-level", env("CROWSNEST_LOG_LEVEL", "info"), "debug, info, warn or error (env CROWSNEST_LOG_LEVEL)")
	fs.StringVar(&o.logFormat, "log-format", env("CROWSNEST_LOG_FORMAT", "json"), "log format: json or text (env CROWSNEST_LOG_FORMAT)")
	bindRematchFlags(fs, o, env)
	fs.DurationVar(&o.shutdownTimeout, "shutdown-timeout", cli.EnvDuration(env("CROWSNEST_SHUTDOWN_TIMEOUT", ""), 20*time.Second), "time to finish downloads in flight and stop a re-match pass on SIGTERM (env CROWSNEST_SHUTDOWN_TIMEOUT)")
}

func bindRematchFlags(fs *flag.FlagSet, o *serveOptions, env envFunc) {
	fs.StringVar(&o.resultsAPIURL, "results-api-url", env("CROWSNEST_RESULTS_API_URL", ""),
		"results-api base URL whose stored reports are re-matched when the DB changes, e.g. http://crowsnest-results-api:8080; empty turns re-matching off (env CROWSNEST_RESULTS_API_URL)")
	fs.StringVar(&o.resultsAPITokenFile, "results-api-token-file", env("CROWSNEST_RESULTS_API_TOKEN_FILE", ""),
		"file holding the bearer token for results-api with the rematch scope (the matcher's projected service-account token), read on every request; empty turns re-matching off (env CROWSNEST_RESULTS_API_TOKEN_FILE)")
	fs.IntVar(&o.rematchConcurrency, "rematch-concurrency", int(cli.EnvInt(env("CROWSNEST_REMATCH_CONCURRENCY", ""), 2)),
		"reports re-matched at once (env CROWSNEST_REMATCH_CONCURRENCY)")
	fs.BoolVar(&o.rematchSkip, "rematch-skip", cli.EnvBool(env("CROWSNEST_REMATCH_SKIP", ""), true),
		"skip re-matching the reports a DB update cannot change (their recorded lookups meet no row that changed since the previous DB); false matches every report (env CROWSNEST_REMATCH_SKIP)")
	fs.Float64Var(&o.rematchSkipCheck, "rematch-skip-check", envFloat(env("CROWSNEST_REMATCH_SKIP_CHECK", ""), 0.02),
		"fraction of the reports a pass would skip that it matches in full anyway to check the skip (and the first one always); a mismatch counts in crowsnest_rematch_skip_mismatch_total (env CROWSNEST_REMATCH_SKIP_CHECK)")
	fs.StringVar(&o.natsURL, "nats-url", env("CROWSNEST_NATS_URL", ""), "NATS URL for events, e.g. nats://nats:4222; empty turns events off (env CROWSNEST_NATS_URL)")
	fs.StringVar(&o.nats.User, "nats-user", env("CROWSNEST_NATS_USER", ""), "NATS user (the chart's bundled NATS: matcher), with --nats-password-file (env CROWSNEST_NATS_USER)")
	fs.StringVar(&o.nats.PasswordFile, "nats-password-file", env("CROWSNEST_NATS_PASSWORD_FILE", ""), "file holding the NATS user's password (env CROWSNEST_NATS_PASSWORD_FILE)")
	fs.StringVar(&o.nats.CredsFile, "nats-creds", env("CROWSNEST_NATS_CREDS", ""), "NATS .creds file (JWT and NKey seed), instead of user and password (env CROWSNEST_NATS_CREDS)")
	fs.StringVar(&o.nats.NKeyFile, "nats-nkey-file", env("CROWSNEST_NATS_NKEY_FILE", ""), "file holding an NKey seed, instead of user and password (env CROWSNEST_NATS_NKEY_FILE)")
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

func parseServe(args []string, getenv func(string) string, out io.Writer) (serveOptions, error) {
	var o serveOptions
	fs := flag.NewFlagSet("matcher serve", flag.ContinueOnError)
	fs.SetOutput(out)
	bindServeFlags(fs, &o, envLookup(getenv))
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.upstreamURL == "off" {
		o.upstreamURL = ""
	}
	if o.upstreamURL != "" {
		err := vulndb.CheckUpstreamURL(o.upstreamURL, o.allowInsecureUpstream)
		if errors.Is(err, vulndb.ErrInsecureUpstream) {
			return o, fmt.Errorf("--upstream-url: %w (pass --allow-insecure-upstream for a mirror on a trusted network)", err)
		}
		if err != nil {
			return o, fmt.Errorf("--upstream-url: %w", err)
		}
	}
	if o.resultsAPIURL != "" {
		u, err := url.Parse(o.resultsAPIURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return o, fmt.Errorf("--results-api-url %q: want an http or https URL", vulndb.Redact(o.resultsAPIURL))
		}
		o.resultsAPIURL = strings.TrimRight(o.resultsAPIURL, "/")
	}
	for name, v := range map[string]int64{"check-interval": int64(o.checkInterval), "listing-timeout": int64(o.listingTimeout),
		"download-timeout": int64(o.downloadTimeout), "shutdown-timeout": int64(o.shutdownTimeout), "import-timeout": int64(o.importTimeout),
		"max-archive-bytes": o.maxArchiveBytes, "max-db-bytes": o.maxDBBytes, "rematch-concurrency": int64(o.rematchConcurrency)} {
		if v <= 0 {
			return o, fmt.Errorf("--%s must be positive", name)
		}
	}
	return o, nil
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
