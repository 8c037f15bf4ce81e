// Package natstest runs an in-process NATS server with JetStream on a random
// loopback port and a temp store, as tests of Crowsnest's event flow need.
package natstest

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
)

// MaxFileStore is the servers' JetStream file-store limit, the chart's
// nats.jetstream.maxFileStore. Set, not left to the server: unset, the limit
// is 75% of the disk space free at start, so a stream or bucket with
// MaxBytes (the notifier's 256 MiB state bucket) is refused with
// "insufficient storage resources" on a machine whose disk is nearly full,
// although the tests store a few kilobytes.
const MaxFileStore = 1 << 30

// Server is an embedded JetStream server that can be stopped and restarted on
// the same port and store, so tests can check reconnects and persistence.
type Server struct {
	*server.Server
	opts *server.Options
}

// Start runs a JetStream-enabled server until Shutdown is called.
func Start(storeDir string) (*Server, error) {
	opts := &server.Options{
		Host:              "127.0.0.1",
		Port:              server.RANDOM_PORT,
		JetStream:         true,
		StoreDir:          storeDir,
		JetStreamMaxStore: MaxFileStore,
		NoLog:             true,
		NoSigs:            true,
	}
	s := &Server{opts: opts}
	if err := s.start(); err != nil {
		return nil, err
	}
	// Pin the port chosen at random so a restart comes back on the same URL.
	s.opts.Port = s.Addr().(*net.TCPAddr).Port
	return s, nil
}

func (s *Server) start() error {
	srv, err := server.NewServer(s.opts.Clone())
	if err != nil {
		return fmt.Errorf("new nats server: %w", err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		srv.Shutdown()
		return fmt.Errorf("nats server not ready after 10s")
	}
	s.Server = srv
	return nil
}

// Stop shuts the server down and waits until it is gone.
func (s *Server) Stop() {
	s.Shutdown()
	s.WaitForShutdown()
}

// Restart stops the server if it runs and starts it again on the same port
// and store.
func (s *Server) Restart() error {
	s.Stop()
	return s.start()
}

// StartT starts a server for one test and shuts it down when the test ends.
// The returned URL is what clients dial.
func StartT(t testing.TB) (*Server, string) {
	t.Helper()
	s, err := Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop() })
	return s, s.ClientURL()
}

// StartAuthT starts a server for one test that admits only the given
// Crowsnest users, each with the permissions of the shared contract
// (eventsv1.ServerAuthorization: the configuration the local stack and the
// chart run), and shuts it down when the test ends.
func StartAuthT(t testing.TB, passwords map[eventsv1.User]string) (*Server, string) {
	t.Helper()
	auth, err := eventsv1.ServerAuthorization(passwords)
	if err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(t.TempDir(), "nats.conf")
	if err := os.WriteFile(conf, []byte(auth), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(conf)
	if err != nil {
		t.Fatalf("nats config: %v", err)
	}
	opts.Host, opts.Port = "127.0.0.1", server.RANDOM_PORT
	opts.JetStream, opts.StoreDir, opts.JetStreamMaxStore = true, t.TempDir(), MaxFileStore
	opts.NoLog, opts.NoSigs = true, true
	s := &Server{opts: opts}
	if err := s.start(); err != nil {
		t.Fatal(err)
	}
	s.opts.Port = s.Addr().(*net.TCPAddr).Port
	t.Cleanup(func() { s.Stop() })
	return s, s.ClientURL()
}
