// Command kubectl-crowsnest is the kubectl plugin of Crowsnest: `kubectl
// crowsnest images|image|cve|changes|why` read results-api through the API
// server's service proxy with the user's own kubeconfig credentials.
//
// Install with `go install github.com/crowsnest-dev/crowsnest/kubectl-crowsnest@latest`
// (or krew, krew/crowsnest.yaml); kubectl finds kubectl-crowsnest on PATH.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/crowsnest-dev/crowsnest/kubectl-crowsnest/internal/cli"
	"github.com/crowsnest-dev/crowsnest/kubectl-crowsnest/internal/output"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := cli.NewCommand(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}, os.Getenv).ExecuteContext(ctx)
	stop()
	if err != nil {
		// Errors can quote what a server said: print them escaped too.
		fmt.Fprintln(os.Stderr, "error:", output.CleanLines(err.Error()))
		os.Exit(1)
	}
}
