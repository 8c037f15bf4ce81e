// Command operator runs Crowsnest's Scanner and ClusterScanner
// controllers: flags → Options → manager with scanner.Setup and
// clusterscanner.Setup.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/go-logr/logr"
	"go.uber.org/zap/zapcore"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/crowsnest-dev/crowsnest/api/buildinfo"
	"github.com/crowsnest-dev/crowsnest/api/memlimit"
	"github.com/crowsnest-dev/crowsnest/operator/internal/bus"
	"github.com/crowsnest-dev/crowsnest/operator/internal/controller"
	"github.com/crowsnest-dev/crowsnest/operator/internal/controller/clusterscanner"
	"github.com/crowsnest-dev/crowsnest/operator/internal/controller/scanner"
	"github.com/crowsnest-dev/crowsnest/operator/internal/resultsclient"
)

func main() {
	ctx := ctrl.SetupSignalHandler()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr, ctrl.GetConfig); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "operator:", err)
		os.Exit(1)
	}
}

// run parses args (with env defaults), then runs the manager until ctx ends;
// --version prints the build to stdout and returns nil.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, kubeconfig func() (*rest.Config, error)) error {
	var o Options
	fs := flag.NewFlagSet("operator", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o.BindFlags(fs)
	if err := applyEnv(fs, getenv); err != nil {
		return err
	}
	// Bound after applyEnv: no environment variable turns --version on.
	version := fs.Bool("version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *version {
		_, err := fmt.Fprintln(stdout, buildinfo.String("operator"))
		return err
	}
	if err := o.Validate(); err != nil {
		return err
	}
	// The manager logs from many goroutines: serialize the writes, since
	// stderr need not be safe for concurrent use (a test's buffer is not).
	logOpts, err := o.loggerOptions(zapcore.Lock(zapcore.AddSync(stderr)))
	if err != nil {
		return err
	}
	ctrl.SetLogger(zap.New(logOpts...))
	limit, source, err := memlimit.Set(getenv, memlimit.CgroupFile)
	if err != nil {
		return err
	}
	if limit > 0 {
		ctrl.Log.Info("go memory limit set", "bytes", limit, "from", source)
	}
	cfg, err := restConfig(o.Kubeconfig, kubeconfig)
	if err != nil {
		return fmt.Errorf("kubernetes client config: %w", err)
	}
	// A wave of scans leaves the heap at its size for as long as the
	// operator then idles: hand it back once the operator goes quiet.
	idleCtx, stopIdle := context.WithCancel(ctx)
	defer stopIdle()
	go memlimit.ReleaseWhenIdle(idleCtx, memlimit.Idle{})
	return start(ctx, cfg, o)
}

// restConfig is the API server connection: the --kubeconfig file when
// given (controller-runtime's convention), else fallback (KUBECONFIG, the
// in-cluster config, ~/.kube/config).
func restConfig(path string, fallback func() (*rest.Config, error)) (*rest.Config, error) {
	if path != "" {
		return clientcmd.BuildConfigFromFlags("", path)
	}
	return fallback()
}

// start builds the manager and the controllers (scanner.Setup,
// clusterscanner.Setup)
// and runs them until ctx ends.
func start(ctx context.Context, cfg *rest.Config, o Options) error {
	scheme, err := controller.NewScheme()
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        scheme,
		Cache:                         clusterscanner.CacheOptions(scanner.CacheOptions(o.WatchNamespaces...)),
		Metrics:                       metricsOptions(o),
		HealthProbeBindAddress:        o.ProbeAddr,
		PprofBindAddress:              o.PprofAddr,
		LeaderElection:                o.LeaderElect,
		LeaderElectionID:              "crowsnest-operator.crowsnest.dev",
		LeaderElectionNamespace:       o.LeaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
	})
	if err != nil {
		return fmt.Errorf("create manager: %w", err)
	}
	lookupOpts := resultsclient.Options{
		BaseURL: o.ResultsAPIURL, CacheTTL: o.LookupCacheTTL, Timeout: o.LookupTimeout, Observe: scanner.ObserveLookup,
	}
	if o.ResultsAPITokenFile != "" {
		lookupOpts.Token = readToken(o.ResultsAPITokenFile)
	}
	lookup, err := resultsclient.New(lookupOpts)
	if err != nil {
		return err
	}
	deps := scanner.Deps{Lookup: lookup, Options: o.controllerOptions()}
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
	if err := scanner.Setup(mgr, deps); err != nil {
		return err
	}
	// A ClusterScanner needs every namespace in view.
	if len(o.WatchNamespaces) == 0 {
		if err := clusterscanner.Setup(mgr, o.clusterScannerOptions()); err != nil {
			return err
		}
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("add healthz check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return fmt.Errorf("add readyz check: %w", err)
	}
	logScope(ctrl.Log.WithName("setup"), o)
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("run manager: %w", err)
	}
	return nil
}

// metricsOptions serves /metrics over HTTPS behind controller-runtime's
// authentication and authorization filter (a scraper's bearer token must be
// allowed to get the non-resource URL /metrics), or, with
// --metrics-secure=false, over plain HTTP to anyone who can connect.
func metricsOptions(o Options) metricsserver.Options {
	if !o.MetricsSecure {
		return metricsserver.Options{BindAddress: o.MetricsAddr}
	}
	return metricsserver.Options{
		BindAddress:    o.MetricsAddr,
		SecureServing:  true,
		FilterProvider: filters.WithAuthenticationAndAuthorization,
		CertDir:        o.MetricsCertDir,
		// HTTP/2 stays off, as in kubebuilder's scaffold: its stream
		// handling has been a denial-of-service vector (CVE-2023-44487).
		TLSOpts: []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }},
	}
}

// logScope says at start-up what the operator will touch and so which RBAC
// it needs: cluster-wide is a choice, and it is stated as one.
func logScope(log logr.Logger, o Options) {
	log.Info("starting operator", "resultsAPI", o.ResultsAPIURL, "nats", o.NATSURL != "", "leaderElect", o.LeaderElect,
		"metricsSecure", o.MetricsSecure)
	if len(o.WatchNamespaces) == 0 {
		log.Info("watching Scanners, Pods and Jobs in every namespace: this needs a ClusterRole that can create Jobs cluster-wide; " +
			"set --watch-namespaces to need only a Role in each listed namespace")
	} else {
		log.Info("watching Scanners, Pods and Jobs only in the listed namespaces; a Role in each suffices", "namespaces", o.WatchNamespaces)
		log.Info("ClusterScanners are not served: they need every namespace in view (no --watch-namespaces)")
	}
	if !o.MetricsSecure && o.MetricsAddr != "0" {
		log.Info("metrics are served over plain HTTP without authentication (--metrics-secure=false); bind them to a loopback address", "address", o.MetricsAddr)
	}
}
