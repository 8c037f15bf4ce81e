package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/crowsnest-dev/crowsnest/api/cli"
	"github.com/crowsnest-dev/crowsnest/api/memlimit"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/service"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/ui"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/vulnmetrics"
)

// run parses args (with CROWSNEST_* environment defaults), then serves
// until ctx is cancelled and shuts down gracefully; --help and --version
// print to stdout and return nil.
func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	o, err := parseFlags(args, getenv, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	log, err := cli.NewLogger(o.LogLevel, o.LogFormat, stdout)
	if err != nil {
		return err
	}
	slog.SetDefault(log)
	limit, source, err := memlimit.Set(getenv, memlimit.CgroupFile)
	if err != nil {
		return err
	}
	if limit > 0 {
		log.Info("go memory limit set", "bytes", limit, "from", source)
	}
	return start(ctx, o, log)
}

// start wires the service from validated options and serves it until ctx
// is cancelled, then shuts down gracefully.
func start(ctx context.Context, o *Options, log *slog.Logger) error {
	cfg, err := serviceConfig(o, log)
	if err != nil {
		return err
	}
	var certs *certReloader
	if o.TLSCertFile != "" {
		if certs, err = newCertReloader(o.TLSCertFile, o.TLSKeyFile, log); err != nil {
			return err
		}
	}
	svc, err := service.New(ctx, cfg)
	if err != nil {
		return err
	}
	defer svc.Close()

	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	// Read and write deadlines are per route (httpapi.Limits): a server-wide
	// one would cut BOM downloads and WebSockets short.
	srv := &http.Server{Handler: svc.Handler, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	errc := make(chan error, 1)
	if certs != nil {
		srv.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: certs.GetCertificate}
		// HTTP/1.1 only, as on plain HTTP: the per-route deadlines, memory
		// budgets and WebSocket caps were built and measured for it.
		srv.Protocols = new(http.Protocols)
		srv.Protocols.SetHTTP1(true)
		go func() { errc <- srv.ServeTLS(ln, "", "") }()
	} else {
		go func() { errc <- srv.Serve(ln) }()
	}
	if o.MetricsListen != "" {
		msrv, err := serveMetrics(o.MetricsListen, svc.MetricsHandler, cfg.Scrapers != nil, certs, log, errc)
		if err != nil {
			_ = srv.Close()
			return err
		}
		defer msrv.Close()
	}
	log.Info("serving", "addr", ln.Addr().String(), "tls", certs != nil, "events", o.NATSURL != "", "max_bom_bytes", o.MaxBOMBytes,
		"ingest_memory_bytes", o.Limits.IngestMemory, "read_memory_bytes", o.Limits.ReadMemory, "max_findings", o.Limits.MaxFindings)

	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), o.ShutdownTimeout)
	defer cancel()
	svc.Hub.Close() // WebSockets are hijacked: Shutdown does not wait for them
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// serviceConfig is the service's configuration from validated options: the
// UI, the events connection, and who may write, read and scrape metrics.
func serviceConfig(o *Options, log *slog.Logger) (service.Config, error) {
	uiFS := ui.Embedded()
	if o.UIDir != "" {
		uiFS = ui.Dir(o.UIDir)
	}
	natsConnect, err := o.NATS.Options()
	if err != nil {
		return service.Config{}, err
	}
	sla, err := report.ParseSLA(o.SLA)
	if err != nil {
		return service.Config{}, fmt.Errorf("--sla: %w", err)
	}
	cfg := service.Config{SLA: sla, SeparateMetrics: o.MetricsListen != "", DatabaseURL: o.DatabaseURL, NATSURL: o.NATSURL, NATSConnect: natsConnect, WriteToken: o.WriteToken,
		MaxBOMBytes: o.MaxBOMBytes, OriginPatterns: splitList(o.Origins), UI: ui.Handler(uiFS), Logger: log,
		Limits: o.Limits, StatementTimeout: o.StatementTimeout,
		MaxWebSocketClients: o.MaxWSClients, MaxWebSocketClientsPerAddr: o.MaxWSClientsPerIP, ReportRetention: o.ReportRetention,
		VulnMetrics: vulnmetrics.Options{Interval: o.VulnInterval, MaxNamespaces: o.VulnMaxNamespaces}}
	keys := &issuerKeys{on: o.VerifyTokens}
	if !o.VerifyTokens {
		log.Warn("--verify-token-signatures=false: every well-formed token costs a TokenReview, and a flood of forged ones can lock out valid tokens for a while")
	}
	// Validate has refused every other mode.
	switch o.AuthMode {
	case "static":
		if o.WriteToken == "" {
			log.Warn("no write token configured: PUT and DELETE will be refused")
		}
	case "tokenreview":
		if cfg.Gate, err = writeGate(o, keys); err != nil {
			return service.Config{}, err
		}
	}
	switch o.ReadAuth {
	case "open":
		log.Warn("--read-auth=open: anyone who reaches the API reads every report")
	case "kubernetes":
		if cfg.Reads, err = readAuth(o, cfg.Gate, keys); err != nil {
			return service.Config{}, err
		}
	}
	if o.Exceptions {
		if cfg.Exceptions, err = exceptionWatch(o); err != nil {
			return service.Config{}, err
		}
	}
	switch metricsAuthMode(o) {
	case "open":
		if o.ReadAuth != "open" {
			log.Warn("--metrics-auth=open: anyone who reaches /metrics learns every namespace's vulnerability counts")
		}
	case "kubernetes":
		if cfg.Scrapers, err = metricsAuth(o, keys); err != nil {
			return service.Config{}, err
		}
	}
	return cfg, nil
}
