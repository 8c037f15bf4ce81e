// Command pgserver starts a throwaway Postgres server (the same one pgtest
// uses), creates a database, prints `DATABASE_URL=<url>` on stdout and keeps
// running until it receives SIGINT/SIGTERM (or, with -watch-stdin, until its
// stdin closes, so a parent that dies cannot leak it); then it stops
// the server and removes its data. Browser tests and the local stack use it.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/jackc/pgx/v5"

	"github.com/crowsnest-dev/crowsnest/test/support/pgtest"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "pgserver:", err)
		os.Exit(1)
	}
}

func run() error {
	watchStdin := flag.Bool("watch-stdin", false, "also stop when stdin closes")
	flag.Parse()
	srv, err := pgtest.StartServer()
	if err != nil {
		return err
	}
	defer func() { _ = srv.Stop() }()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	conn, err := pgx.Connect(ctx, srv.AdminURL())
	if err != nil {
		return err
	}
	_, err = conn.Exec(ctx, "CREATE DATABASE crowsnest")
	_ = conn.Close(ctx)
	if err != nil {
		return fmt.Errorf("create database: %w", err)
	}
	fmt.Printf("DATABASE_URL=%s\n", srv.DatabaseURL("crowsnest"))

	stdinClosed := make(chan struct{})
	if *watchStdin {
		go func() { _, _ = io.Copy(io.Discard, os.Stdin); close(stdinClosed) }()
	}
	select {
	case <-ctx.Done():
	case <-stdinClosed:
	}
	return nil
}
