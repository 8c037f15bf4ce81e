package main

import (
	"bytes"
	"errors"
	"flag"
	"strings"
	"testing"
	"time"
)

func TestParseEnvAndErrors(t *testing.T) {
	env := map[string]string{"CROWSNEST_CONFIG": "/c.yaml", "CROWSNEST_NOTIFY_MAX_AGE": "2h", "CROWSNEST_DRY_RUN": "true", "CROWSNEST_NATS_USER": "notifier"}
	o, err := parse(nil, func(k string) string { return env[k] }, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if o.Config != "/c.yaml" || o.NotifyMaxAge != 2*time.Hour || !o.DryRun || o.NATS.User != "notifier" || o.Consumer != "notifier" {
		t.Fatalf("env defaults: %+v", o)
	}
	if o, _ := parse([]string{"--config", "/flag.yaml"}, func(k string) string { return env[k] }, &bytes.Buffer{}); o.Config != "/flag.yaml" {
		t.Fatal("a flag does not override its env default")
	}
	for args, want := range map[string]string{
		"--dashboard-url ftp://x":  "want an http or https URL",
		"--notify-max-age 0s":      "--notify-max-age must be positive",
		"--retry-min-backoff -1s":  "--retry-min-backoff must be positive",
		"--consumer=":              "--consumer must not be empty",
		"extra":                    "unexpected arguments",
		"--no-such-flag":           "flag provided but not defined",
		"--state-max-bytes banana": "invalid value",
	} {
		if _, err := parse(strings.Fields(args), func(string) string { return "" }, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", args, err, want)
		}
	}
}

// TestHelpListsEveryFlagWithItsEnv: -h prints every flag, each naming its
// CROWSNEST_* variable.
func TestHelpListsEveryFlagWithItsEnv(t *testing.T) {
	var out bytes.Buffer
	if _, err := parse([]string{"-h"}, func(string) string { return "" }, &out); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: %v", err)
	}
	for _, name := range []string{"config", "check-config", "dashboard-url", "listen", "nats-url", "nats-user", "nats-password-file",
		"nats-creds", "nats-nkey-file", "consumer", "state-max-bytes", "notify-max-age", "retry-min-backoff", "retry-max-backoff", "dry-run", "log-level", "log-format"} {
		env := "CROWSNEST_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
		if name == "nats-creds" {
			env = "CROWSNEST_NATS_CREDS"
		}
		if !strings.Contains(out.String(), "-"+name) || !strings.Contains(out.String(), "(env "+env+")") {
			t.Errorf("help lacks -%s with %s", name, env)
		}
	}
	if n := strings.Count(out.String(), "(env CROWSNEST_"); n != 17 {
		t.Errorf("help lists %d env variables, want 17 (one per flag but --version)", n)
	}
}

// TestCheckConfig: --check-config reads the secret files and reports what
// is wrong without connecting anywhere.
func TestCheckConfig(t *testing.T) {
	e := &env{t: t, dir: t.TempDir()}
	cfg := e.write("config.yaml", "receivers: [{name: chat, slack: {webhookURLFile: /nonexistent/url}}]\nroutes: [{name: r, receiver: chat}]\n")
	o, err := parse([]string{"--config", cfg, "--check-config"}, func(string) string { return "" }, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err = run(t.Context(), o, deps{stdout: &out, stderr: &bytes.Buffer{}})
	if err == nil || !strings.Contains(err.Error(), "receiver chat: slack webhook URL") {
		t.Fatalf("missing secret: %v", err)
	}
	e.write("url", "https://hooks.slack.example/services/T/B/X\n")
	e.write("config.yaml", "receivers: [{name: chat, slack: {webhookURLFile: "+e.dir+"/url}}]\nroutes: [{name: r, receiver: chat}]\n")
	if err := run(t.Context(), o, deps{stdout: &out, stderr: &bytes.Buffer{}}); err != nil || !strings.Contains(out.String(), "1 receivers, 1 routes: ok") {
		t.Fatalf("good config: %v %q", err, out.String())
	}
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
		{"dashboard", func(o *Options) { o.DashboardURL = "https://crowsnest.example.com" }, ""},
		{"text logs", func(o *Options) { o.LogLevel, o.LogFormat = "debug", "text" }, ""},
		{"dashboard scheme", func(o *Options) { o.DashboardURL = "ftp://x" }, `--dashboard-url "ftp://x": want an http or https URL`},
		{"dashboard without host", func(o *Options) { o.DashboardURL = "https:///images" }, `--dashboard-url "https:///images": want an http or https URL`},
		{"state size", func(o *Options) { o.StateMaxBytes = 0 }, "--state-max-bytes must be positive"},
		{"notify age", func(o *Options) { o.NotifyMaxAge = 0 }, "--notify-max-age must be positive"},
		{"min backoff", func(o *Options) { o.MinBackoff = -time.Second }, "--retry-min-backoff must be positive"},
		{"max backoff", func(o *Options) { o.MaxBackoff = 0 }, "--retry-max-backoff must be positive"},
		{"consumer", func(o *Options) { o.Consumer = "" }, "--consumer must not be empty"},
		{"log level", func(o *Options) { o.LogLevel = "loud" }, `--log-level: slog: level string "loud": unknown name`},
		{"log format", func(o *Options) { o.LogFormat = "logfmt" }, `--log-format "logfmt": want json or text`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var o Options
			o.BindFlags(flag.NewFlagSet("x", flag.ContinueOnError), func(string) string { return "" })
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
