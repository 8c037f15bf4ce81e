// Package natstest runs an in-process NATS server with JetStream on a random
// loopback port and a temp store, as tests of Crowsnest's event flow need.
package natstest

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Server is an embedded JetStream server that can be stopped and restarted on
// the same port and store, so tests can check reconnects and persistence.
type Server struct {
	*server.Server
	opts *server.Options
}

// Start runs a JetStream-enabled server until Shutdown is called.
func Start(storeDir string) (*Server, error) {
	opts := &server.Options{
		Host:      "127.0.0.1",
		Port:      server.RANDOM_PORT,
		JetStream: true,
		StoreDir:  storeDir,
		NoLog:     true,
		NoSigs:    true,
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
