// Command notifier tells people when a new serious vulnerability starts
// running: it consumes Crowsnest's public events (findings.changed,
// inventory.snapshot, job.done) from NATS JetStream through a durable
// consumer, keeps its state in a NATS KeyValue bucket, and notifies
// Alertmanager, Slack and webhooks as its YAML configuration routes.
//
// Every flag has a CROWSNEST_* environment default; see `notifier -h`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	o, err := parse(os.Args[1:], os.Getenv, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err == nil {
		err = run(ctx, o, deps{stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv})
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "notifier:", err)
		os.Exit(1)
	}
}
