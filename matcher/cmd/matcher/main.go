// Command matcher holds the cluster's Grype vulnerability DB and serves it to
// scan Jobs.
//
//	matcher serve            fetch the DB on a schedule, serve it in Grype's
//	                         listing format, /healthz /readyz /metrics and the
//	                         admin upload POST /api/v1/vulndb/import; on every
//	                         new DB re-match results-api's stored reports and
//	                         publish crowsnest.vulndb.updated and
//	                         crowsnest.rematch.done to NATS JetStream
//	matcher db import FILE   import a DB archive into --data-dir (air gap; no
//	                         network)
//	matcher db status        print the active DB as JSON
//	matcher version          print the version (also --version)
//
// Every flag has a CROWSNEST_* environment default; see `matcher serve -h`.
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

	"github.com/crowsnest-dev/crowsnest/api/buildinfo"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "matcher:", err)
		os.Exit(1)
	}
}

const usage = `usage:
  matcher serve [flags]           hold, fetch and serve the vulnerability DB
  matcher db import [flags] FILE  import a Grype DB archive (no network)
  matcher db status [flags]       print the active DB as JSON
  matcher version                 print the version (also --version)
Every flag has a CROWSNEST_* environment default.
`

// printFlags lists every command's flags (what each prints for -h).
func printFlags(ctx context.Context, getenv func(string) string, w io.Writer) {
	fmt.Fprintln(w)
	_, _ = parseServe([]string{"-h"}, getenv, w)
	_ = dbImport(ctx, []string{"-h"}, getenv, io.Discard, w)
	_ = dbStatus([]string{"-h"}, getenv, io.Discard, w)
}

// run dispatches the subcommands.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errors.New("missing command")
	}
	switch {
	case args[0] == "serve":
		o, err := parseServe(args[1:], getenv, stderr)
		if err != nil {
			return err
		}
		return serve(ctx, o, deps{log: stderr, getenv: getenv})
	case args[0] == "db" && len(args) > 1 && args[1] == "import":
		return dbImport(ctx, args[2:], getenv, stdout, stderr)
	case args[0] == "db" && len(args) > 1 && args[1] == "status":
		return dbStatus(args[2:], getenv, stdout, stderr)
	case args[0] == "version" || args[0] == "--version" || args[0] == "-version":
		_, err := fmt.Fprintln(stdout, buildinfo.String("matcher"))
		return err
	case args[0] == "-h" || args[0] == "--help" || args[0] == "help":
		fmt.Fprint(stdout, usage)
		printFlags(ctx, getenv, stdout)
		return nil
	default:
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("unknown command %q", args[0])
	}
}
