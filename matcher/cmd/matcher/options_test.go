package main

import (
	"flag"
	"testing"
)

// TestValidate: each invalid option, alone on valid defaults, is refused
// with its message; the defaults and the valid alternatives pass.
func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*Options)
		want   string // "" for valid
	}{
		{"defaults", func(*Options) {}, ""},
		{"no upstream (air gap)", func(o *Options) { o.UpstreamURL = "" }, ""},
		{"insecure upstream allowed", func(o *Options) { o.UpstreamURL, o.AllowInsecureUpstream = "http://mirror.example/db", true }, ""},
		{"rematch", func(o *Options) { o.ResultsAPIURL = "https://results-api:8080/" }, ""},
		{"text logs", func(o *Options) { o.LogLevel, o.LogFormat = "debug", "text" }, ""},
		{"insecure upstream", func(o *Options) { o.UpstreamURL = "http://mirror.example/db" },
			"--upstream-url: upstream URL http://mirror.example/db: plain HTTP upstream refused: use https or allow it explicitly " +
				"(pass --allow-insecure-upstream for a mirror on a trusted network)"},
		{"upstream not a URL", func(o *Options) { o.UpstreamURL = "::bad" },
			`--upstream-url: upstream URL "(unparseable URL)": want an http(s) URL`},
		{"results-api scheme", func(o *Options) { o.ResultsAPIURL = "ftp://results-api" }, `--results-api-url "ftp://results-api": want an http or https URL`},
		{"results-api without host", func(o *Options) { o.ResultsAPIURL = "http://" }, `--results-api-url "http:": want an http or https URL`},
		{"check interval", func(o *Options) { o.CheckInterval = 0 }, "--check-interval must be positive"},
		{"listing timeout", func(o *Options) { o.ListingTimeout = -1 }, "--listing-timeout must be positive"},
		{"download timeout", func(o *Options) { o.DownloadTimeout = 0 }, "--download-timeout must be positive"},
		{"shutdown timeout", func(o *Options) { o.ShutdownTimeout = 0 }, "--shutdown-timeout must be positive"},
		{"import timeout", func(o *Options) { o.ImportTimeout = 0 }, "--import-timeout must be positive"},
		{"archive bytes", func(o *Options) { o.MaxArchiveBytes = 0 }, "--max-archive-bytes must be positive"},
		{"db bytes", func(o *Options) { o.MaxDBBytes = 0 }, "--max-db-bytes must be positive"},
		{"rematch concurrency", func(o *Options) { o.RematchConcurrency = 0 }, "--rematch-concurrency must be positive"},
		{"skip check fraction", func(o *Options) { o.RematchSkipCheck = 1.5 }, "--rematch-skip-check 1.5: want a fraction in [0, 1]"},
		{"skip check cap", func(o *Options) { o.RematchSkipCheckMax = -1 }, "--rematch-skip-check-max -1: want 0 (no cap) or more"},
		{"log level", func(o *Options) { o.LogLevel = "loud" }, `--log-level: slog: level string "loud": unknown name`},
		{"log format", func(o *Options) { o.LogFormat = "logfmt" }, `--log-format "logfmt": want json or text`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var o Options
			o.BindFlags(flag.NewFlagSet("x", flag.ContinueOnError), noEnv)
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
