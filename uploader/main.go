package main

import (
	"github.com/crowsnest-dev/crowsnest/api/scan"

	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	if printVersion(os.Args[1:], os.Stdout) {
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stderr)
	stop()
	os.Exit(code)
}

// run uploads one report, or with the docker-config subcommand merges pull
// secrets, or with the probe subcommand checks readiness endpoints, and
// returns the process exit code.
func run(ctx context.Context, args []string, env func(string) string, stderr io.Writer) int {
	if len(args) > 0 && args[0] == dockerConfigCommand {
		return runDockerConfig(args[1:], stderr)
	}
	if len(args) > 0 && args[0] == probeCommand {
		return runProbe(ctx, args[1:], stderr)
	}
	cfg, err := parseConfig(args, env, stderr)
	if errors.Is(err, errHelp) {
		return scan.ExitOK
	}
	log := slog.New(slog.NewJSONHandler(stderr, nil)).With("digest", cfg.Digest, "image", cfg.Image)
	if err != nil {
		log.Error("invalid configuration", "error", err.Error(), "exit_code", scan.ExitUsage)
		return scan.ExitUsage
	}
	code := upload(ctx, cfg, log)
	if code != scan.ExitOK {
		log.Info("uploader finished", "exit_code", code)
	}
	return code
}

func upload(ctx context.Context, cfg Config, log *slog.Logger) int {
	report, err := readReport(cfg.BOMFile, cfg.MaxBOMBytes)
	if err != nil {
		log.Error("report invalid", "bom_file", cfg.BOMFile, "error", err.Error())
		return scan.ExitInvalidReport
	}
	token, err := readToken(cfg.TokenFile)
	if err != nil {
		log.Error("token unreadable", "token_file", cfg.TokenFile, "error", err.Error())
		return scan.ExitTokenInvalid
	}
	body, err := zstdBody(report)
	if err != nil {
		log.Error("compress report", "error", err.Error())
		return scan.ExitFailure
	}
	endpoint, err := endpointURL(cfg.APIURL, cfg.Digest, cfg.Image)
	if err != nil {
		log.Error("invalid configuration", "error", err.Error())
		return scan.ExitUsage
	}
	var db provenance
	if cfg.GrypeJSON != "" {
		// A report without its DB is still worth storing (as matched
		// against an unknown DB): warn, do not fail the scan.
		if db, err = readProvenance(cfg.GrypeJSON); err != nil {
			log.Warn("DB provenance unreadable, uploading without it", "grype_json", cfg.GrypeJSON, "error", err.Error())
		}
	}
	log.Info("uploading report", "bom_file", cfg.BOMFile, "bytes", len(report), "compressed_bytes", len(body.data), "encoding", body.encoding,
		"api_url", cfg.APIURL, "max_attempts", cfg.MaxAttempts, "deadline", cfg.Deadline.String(),
		"db_built", db.builtString(), "db_schema", db.Schema)
	ctx, cancel := context.WithTimeout(ctx, cfg.Deadline)
	defer cancel()
	u := &uploader{
		client:      &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()},
		endpoint:    endpoint,
		db:          db,
		token:       token,
		timeout:     cfg.Timeout,
		maxAttempts: cfg.MaxAttempts,
		backoff:     backoff{base: cfg.BaseDelay, max: cfg.MaxDelay},
		log:         log,
		sleep:       sleepCtx,
	}
	start := time.Now()
	err = u.upload(ctx, report, body)
	switch {
	case err == nil:
		return scan.ExitOK
	case errors.Is(err, errRejected):
		return scan.ExitRejected
	default:
		log.Error("upload failed", "error", err.Error(), "elapsed_ms", time.Since(start).Milliseconds())
		return scan.ExitUnreachable
	}
}
