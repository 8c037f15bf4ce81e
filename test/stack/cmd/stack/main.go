// Command stack runs Crowsnest locally (`make demo`): a real control plane
// with kwok Nodes and one real node (containerd + kubelet) for the scan
// Pods, a registry with demo and scan images, NATS, Postgres, results-api,
// the matcher, the notifier and the operator. With --chart (`make
// dev-stack`) it runs the cluster the chart installs onto instead, for
// Tilt (`make dev`) or helm. Ctrl-C stops it all and
// removes its temp state (containers, mounts and the node's bridge too).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/crowsnest-dev/crowsnest/test/stack"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "stack:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var o stack.Options
	fs := flag.NewFlagSet("stack", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.APIAddr, "listen", "127.0.0.1:8080", "results-api (dashboard) address; 127.0.0.1:0 picks a free port")
	fs.StringVar(&o.RegistryAddr, "registry", "", "demo registry address (default: a free port on the node network's gateway, which the real node's Pods reach)")
	fs.IntVar(&o.Nodes, "nodes", 2, "fake kwok Nodes")
	fs.BoolVar(&o.OnlineDB, "online-db", false, "use Grype's published vulnerability DB (needs internet) instead of the offline demo DB")
	fs.BoolVar(&o.ClusterOnly, "cluster-only", false, "run only the control plane, kwok, the registry and the demo Pods")
	fs.StringVar(&o.ReadAuth, "read-auth", "kubernetes", "results-api --read-auth: kubernetes (sign in with a token; the summary says how to get one) or open")
	fs.StringVar(&o.StateDir, "state-dir", "", "keep state (logs, kubeconfig) here instead of a temp dir removed on exit")
	fs.DurationVar(&o.RetryBackoff, "retry-backoff", 15*time.Second, "operator --retry-backoff for failed scans")
	fs.BoolVar(&o.Chart, "chart", false, "run the cluster the chart installs onto instead of Crowsnest's own processes: the real node as the only node, kube-proxy, CoreDNS, every image in the registry, Postgres for Pods, a Grype DB mirror; for make dev (Tilt) or helm install (make dev-stack)")
	noDemo := fs.Bool("no-demo", false, "do not create the demo namespace, Scanner and Pods")
	fs.DurationVar(&o.DBUpdateAfter, "db-update-after", time.Minute, "offline DB: this long after start, import a newer DB into the matcher that publishes two held-back critical advisories (the Changes view fills as it re-matches); 0: never")
	if err := fs.Parse(args); err != nil {
		return err
	}
	// The demo's Pods run on kwok Nodes, which the chart's cluster has not;
	// nothing imports a newer DB into the chart's matcher.
	o.Demo = !*noDemo && !o.Chart
	o.HoldBackAdvisories = o.DBUpdateAfter > 0 && !o.OnlineDB && !o.Chart
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	start := time.Now()
	s, err := stack.Start(ctx, o, log)
	if err != nil {
		return err
	}
	defer func() {
		fmt.Fprintln(stdout, "\nstopping the stack…")
		s.Close()
		if o.StateDir == "" {
			fmt.Fprintln(stdout, "stopped; temp state removed")
		} else {
			fmt.Fprintln(stdout, "stopped; state kept in", o.StateDir)
		}
	}()
	s.PrintSummary(stdout, time.Since(start))
	if o.Demo && s.API != nil {
		go func() {
			up := time.Now()
			wctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
			defer cancel()
			stored, want, err := s.WaitDemoScanned(wctx)
			if ctx.Err() == nil {
				fmt.Fprintln(stdout, stack.DemoReadyLine(stored, want, time.Since(up), err))
			}
		}()
	}
	<-ctx.Done()
	return nil
}
