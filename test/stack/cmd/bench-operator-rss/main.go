// Command bench-operator-rss measures the operator as a separate process
// (`make bench-operator-rss`): the operator binary runs as a child against a
// real kube-apiserver and etcd (envtest) and a real results-api binary on a
// real Postgres, and the numbers come from the process — VmRSS sampled every
// second from /proc/<pid>/status, CPU seconds from /proc/<pid>/stat, the Go
// heap and the reconcile and Job counters from its /metrics.
//
// envtest runs no kubelet and no Job controller, so the harness plays both:
// it writes each Pod's status (running containers with imageIDs) through the
// status subresource, and for every scan Job the operator creates it uploads
// a small CycloneDX report for the Job's digest to results-api and marks the
// Job succeeded ("instant scans").
//
// Scenarios (--scenario, comma-separated):
//
//	10k           10,000 Pods, 500 digests, all reports present, one Scanner;
//	              the current tree's operator and the one at --base-commit
//	100k          100,000 Pods in 2,000 namespaces, 5,000 digests, no reports,
//	              one ClusterScanner (or a Scanner per namespace), instant scans
//	per-namespace 5,000 digests in 500 namespaces, a Scanner in each
//	smoke         all three at tiny sizes, checking the invariants only
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

func main() {
	// envtest logs through controller-runtime; the bench logs its own
	// progress. A nil sink is logr.Discard() (without importing logr).
	ctrllog.SetLogger(ctrllog.Log.WithSink(nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "bench-operator-rss:", err)
		os.Exit(1)
	}
}

// run parses the flags, runs the chosen scenarios and writes the Markdown
// report to --out and stdout. Every process a scenario starts is stopped
// before it returns, on every path.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var o Options
	fs := flag.NewFlagSet("bench-operator-rss", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := o.Complete(); err != nil {
		return err
	}
	b, err := newBench(ctx, o, stderr)
	if err != nil {
		return err
	}
	defer b.Close()
	rep := newReport(o)
	var failed []error
	for _, name := range o.Scenarios {
		sec, err := b.runScenario(ctx, name)
		if sec != nil {
			rep.add(sec)
		}
		if err != nil {
			b.logf("scenario %s: %v", name, err)
			rep.addError(name, err)
			failed = append(failed, fmt.Errorf("scenario %s: %w", name, err))
		}
		if ctx.Err() != nil {
			break
		}
	}
	md := rep.markdown()
	if _, err := io.WriteString(stdout, md); err != nil {
		return err
	}
	if err := writeFile(o.Out, md); err != nil {
		return err
	}
	b.logf("report written to %s", o.Out)
	return errors.Join(append(failed, ctx.Err())...)
}
