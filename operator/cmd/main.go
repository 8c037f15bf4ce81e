// Command operator runs Crowsnest's Scanner controller: flags → Options →
// manager.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
	"github.com/crowsnest-dev/crowsnest/operator/internal/controller"
	"github.com/crowsnest-dev/crowsnest/operator/internal/publish"
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
	ctrl.SetLogger(zap.New(zap.UseDevMode(o.LogFormat == "console"), zap.Level(level), zap.WriteTo(stderr)))
	cfg, err := kubeconfig()
	if err != nil {
		return fmt.Errorf("kubernetes client config: %w", err)
	}
	return start(ctx, cfg, o)
}

func start(ctx context.Context, cfg *rest.Config, o Options) error {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := crowsnestv1alpha1.AddToScheme(scheme); err != nil {
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
		BaseURL: o.ResultsAPIURL, CacheTTL: o.LookupCacheTTL, Timeout: o.LookupTimeout,
		Observe: func(d time.Duration, err error) {
			result := "ok"
			if err != nil {
				result = "error"
			}
			controller.LookupDuration.WithLabelValues(result).Observe(d.Seconds())
		},
	}
	if o.ResultsAPITokenFile != "" {
		lookupOpts.Token = readToken(o.ResultsAPITokenFile)
	}
	lookup, err := resultsclient.New(lookupOpts)
	if err != nil {
		return err
	}
	var pub publish.Publisher = publish.Disabled{}
	var deleted *controller.DeletedReports
	if o.NATSURL != "" {
		js, err := publish.Connect(o.NATSURL, o.PublishTimeout)
		if err != nil {
			return err
		}
		defer js.Close()
		pub = js
		// A report deleted in results-api must be rescanned while its image
		// still runs: reconcile every Scanner with a fresh lookup.
		deleted = controller.NewDeletedReports(mgr.GetClient(), lookup.Forget)
		unsubscribe, err := js.OnReportDeleted(deleted.Deleted)
		if err != nil {
			return err
		}
		defer func() { _ = unsubscribe() }()
		if err := mgr.Add(deleted); err != nil {
			return err
		}
	}
	uploaderURL := o.UploaderAPIURL
	if uploaderURL == "" {
		uploaderURL = o.ResultsAPIURL
	}
	r := &controller.ScannerReconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("crowsnest-operator"),
		Lookup: lookup, Publisher: pub,
		Options: controller.Options{
			GrypeImage: o.GrypeImage, UploaderImage: o.UploaderImage, UploaderAPIURL: uploaderURL,
			ServiceAccount: o.ScanServiceAccount, JobTTL: o.JobTTL, RetryBase: o.RetryBackoff, RetryMax: o.RetryBackoffMax,
			LookupRetry: o.LookupRetry, PublishRetry: o.PublishRetry,
		},
	}
	if deleted != nil {
		r.Rescans = deleted.Events()
	}
	if err := r.SetupWithManager(mgr, o.Workers); err != nil {
		return fmt.Errorf("set up scanner controller: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	ctrl.Log.WithName("setup").Info("starting operator", "resultsAPI", o.ResultsAPIURL, "nats", o.NATSURL != "", "leaderElect", o.LeaderElect)
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("run manager: %w", err)
	}
	return nil
}
