package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/crowsnest-dev/crowsnest/api/scan"
)

// probeCommand is the subcommand of the chart's `helm test` Pod: it checks
// that results-api and the operator answer their readiness endpoints, from
// an image the cluster already pulls for scan Jobs (no shell image).
const probeCommand = "probe"

// probeConfig is the probe's flags.
type probeConfig struct {
	urls     []string
	timeout  time.Duration // one request
	deadline time.Duration // every URL, retries included
	interval time.Duration // between attempts at one URL
}

// runProbe GETs every URL until it answers 2xx or the deadline passes and
// returns the process exit code: 0 when every URL answered 2xx, 2 for bad
// flags, 5 when one never did (the same code the uploader uses for an
// unreachable results-api).
func runProbe(ctx context.Context, args []string, stderr io.Writer) int {
	cfg, err := parseProbe(args, stderr)
	if errors.Is(err, errHelp) {
		return scan.ExitOK
	}
	log := slog.New(slog.NewJSONHandler(stderr, nil))
	if err != nil {
		log.Error("invalid configuration", "error", err.Error(), "exit_code", scan.ExitUsage)
		return scan.ExitUsage
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.deadline)
	defer cancel()
	client := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone(), Timeout: cfg.timeout,
		// A readiness endpoint answers itself; a redirect is a misconfigured URL.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	code := scan.ExitOK
	for _, u := range cfg.urls {
		start := time.Now()
		attempts, status, err := probeURL(ctx, client, u, cfg.interval)
		if err != nil {
			log.Error("probe failed", "url", u, "attempts", attempts, "status", status, "error", err.Error(),
				"elapsed_ms", time.Since(start).Milliseconds())
			code = scan.ExitUnreachable
			continue
		}
		log.Info("probe passed", "url", u, "attempts", attempts, "status", status)
	}
	return code
}

// probeURL GETs u every interval until it answers 2xx or ctx ends; it
// returns the attempts made, the last status (0 without an answer) and,
// on failure, the last error. When the deadline cuts the last attempt
// short, the answer before it is what the failure reports (a 503 and its
// body say more than "context deadline exceeded").
func probeURL(ctx context.Context, client *http.Client, u string, interval time.Duration) (int, int, error) {
	var lastStatus int
	var lastErr error
	for attempt := 1; ; attempt++ {
		status, err := get(ctx, client, u)
		if err == nil {
			return attempt, status, nil
		}
		if status == 0 && ctx.Err() != nil && lastErr != nil {
			return attempt, lastStatus, lastErr // the deadline cut this attempt short
		}
		lastStatus, lastErr = status, err
		select {
		case <-ctx.Done():
			return attempt, status, err
		case <-time.After(interval):
		}
	}
}

// get makes one GET and reads at most 4 KiB of the body (so the connection
// is reused); anything but 2xx is an error.
func get(ctx context.Context, client *http.Client, u string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, fmt.Errorf("%s: %q", resp.Status, body)
	}
	return resp.StatusCode, nil
}

func parseProbe(args []string, stderr io.Writer) (probeConfig, error) {
	fs := flag.NewFlagSet("uploader "+probeCommand, flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := probeConfig{}
	fs.DurationVar(&cfg.timeout, "timeout", 5*time.Second, "timeout of one request")
	fs.DurationVar(&cfg.deadline, "deadline", 2*time.Minute, "time every URL has to answer 2xx, retries included")
	fs.DurationVar(&cfg.interval, "interval", 2*time.Second, "pause between attempts at one URL")
	fs.Usage = func() {
		fmt.Fprint(stderr, probeUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return cfg, errHelp
		}
		return cfg, err
	}
	if fs.NArg() == 0 {
		return cfg, errors.New("at least one URL is required")
	}
	for _, u := range fs.Args() {
		p, err := url.Parse(u)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return cfg, fmt.Errorf("%q is not an http(s) URL", u)
		}
	}
	if cfg.timeout <= 0 || cfg.deadline <= 0 || cfg.interval <= 0 {
		return cfg, errors.New("--timeout, --deadline and --interval must be positive")
	}
	cfg.urls = fs.Args()
	return cfg, nil
}

const probeUsage = `Usage: uploader probe [flags] URL...

GETs each URL until it answers 2xx (redirects are not followed) or the
deadline passes. Exit 0 when every URL answered, 5 when one never did, 2 for
bad flags. HTTPS verifies against the system roots (SSL_CERT_DIR adds more).
The chart's helm test Pod runs it against results-api's and the operator's
/readyz.

Flags:
`
