// Command operator runs Crowsnest's Scanner controller: flags → Options →
// manager with controller.Setup.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"go.uber.org/zap/zapcore"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/crowsnest-dev/crowsnest/operator/internal/bus"
	"github.com/crowsnest-dev/crowsnest/operator/internal/controller"
	"github.com/crowsnest-dev/crowsnest/operator/internal/resultsclient"
)

func main() {
	ctx := ctrl.SetupSignalHandler()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stderr, ctrl.GetConfig); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "operator:", err)
		os.Exit(1)
	}
}

// run parses args (with env defaults), then runs the manager until ctx ends.
func run(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer, kubeconfig func() (*rest.Config, error)) error {
	var o Options
	fs := flag.NewFlagSet("operator", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o.BindFlags(fs)
	if err := applyEnv(fs, getenv); err != nil {
		return err
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := o.Validate(); err != nil {
		return err
	}
	level := zapcore.InfoLevel
	if err := level.UnmarshalText([]byte(o.LogLevel)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	// The manager logs from many goroutines: serialize the writes, since
	// stderr need not be safe for concurrent use (a test's buffer is not).
	logs := zapcore.Lock(zapcore.AddSync(stderr))
	ctrl.SetLogger(zap.New(zap.UseDevMode(o.LogFormat == "console"), zap.Level(level), zap.WriteTo(logs)))
	cfg, err := kubeconfig()
	if err != nil {
		return fmt.Errorf("kubernetes client config: %w", err)
	}
	return start(ctx, cfg, o)
}

// start builds the manager and the Scanner controller (controller.Setup)
// and runs them until ctx ends.
func start(ctx context.Context, cfg *rest.Config, o Options) error {
	scheme, err := controller.NewScheme()
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        scheme,
		Cache:                         controller.CacheOptions(),
		Metrics:                       metricsserver.Options{BindAddress: o.MetricsAddr},
		HealthProbeBindAddress:        o.ProbeAddr,
		LeaderElection:                o.LeaderElect,
		LeaderElectionID:              "crowsnest-operator.crowsnest.dev",
		LeaderElectionNamespace:       o.LeaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
	})
	if err != nil {
		return fmt.Errorf("create manager: %w", err)
	}
	lookupOpts := resultsclient.Options{
		BaseURL: o.ResultsAPIURL, CacheTTL: o.LookupCacheTTL, Timeout: o.LookupTimeout, Observe: controller.ObserveLookup,
	}
	if o.ResultsAPITokenFile != "" {
		lookupOpts.Token = readToken(o.ResultsAPITokenFile)
	}
	lookup, err := resultsclient.New(lookupOpts)
	if err != nil {
		return err
	}
	deps := controller.Deps{Lookup: lookup, Options: o.controllerOptions()}
	if o.NATSURL != "" {
		natsOpts, err := o.NATS.Options()
		if err != nil {
			return err
		}
		js, err := bus.Connect(o.NATSURL, o.PublishTimeout, natsOpts...)
		if err != nil {
			return err
		}
		defer js.Close()
		// Events out, and deleted reports in: a report deleted in
		// results-api is rescanned while its image still runs.
		deps.Publisher, deps.Deletions = js, js
	}
	if err := controller.Setup(mgr, deps); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("add healthz check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return fmt.Errorf("add readyz check: %w", err)
	}
	ctrl.Log.WithName("setup").Info("starting operator", "resultsAPI", o.ResultsAPIURL, "nats", o.NATSURL != "", "leaderElect", o.LeaderElect)
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("run manager: %w", err)
	}
	return nil
}
