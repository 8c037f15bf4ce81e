// Command results-api stores Grype CycloneDX reports in Postgres, serves the
// REST API, the web UI and a WebSocket event stream, and exchanges events
// with the operator over NATS JetStream.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "results-api:", err)
		os.Exit(1)
	}
}
