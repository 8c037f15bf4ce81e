// Package apitest starts a real results API in process for results-api's
// own tests and benchmarks: the real router and store on a fresh Postgres
// database from pgtest, migrations applied, optionally connected to NATS.
// Callers' TestMain must run pgtest.Main. Other components' tests meet
// results-api as users do, its binary over HTTP
// (test/support/resultsapitest): no other module requires results-api
// (hack/verify-imports.sh).
//
//	srv := apitest.Start(t, apitest.WithNATS(url))
//	// PUT srv.URL+"/api/v1/reports/sha256:..." with "Bearer "+srv.Token
//	srv.Close()   // the API goes down (connections refused)
//	srv.Restart() // back on the same address with the same database
package apitest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/test/support/pgtest"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/events"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/service"
)

// Option configures Start.
type Option func(*service.Config)

// WithNATS connects the API to the NATS server at url.
func WithNATS(url string) Option { return func(c *service.Config) { c.NATSURL = url } }

// WithMaxBOMBytes sets the decompressed BOM size limit.
func WithMaxBOMBytes(n int64) Option { return func(c *service.Config) { c.MaxBOMBytes = n } }

// WithLogger sends the API's logs to l (default: discarded).
func WithLogger(l *slog.Logger) Option { return func(c *service.Config) { c.Logger = l } }

// WithDatabaseURL runs the API on an existing database (default: a fresh
// one), e.g. a second replica on the first one's DatabaseURL.
func WithDatabaseURL(dsn string) Option { return func(c *service.Config) { c.DatabaseURL = dsn } }

// WithEventTiming tunes the event bus's intervals (results-api's own tests).
func WithEventTiming(tm events.Timing) Option { return func(c *service.Config) { c.EventTiming = tm } }

// Server is a running results API.
type Server struct {
	URL         string // http://127.0.0.1:PORT, no trailing slash
	Token       string // a bearer token allowed to write
	DatabaseURL string

	t    testing.TB
	cfg  service.Config
	addr string
	mu   sync.Mutex
	http *httptest.Server
	svc  *service.Service
}

// Start runs a results API until the test ends.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	var b [16]byte
	_, _ = rand.Read(b[:])
	sla, _ := report.ParseSLA(report.DefaultSLA) // the binary's default
	cfg := service.Config{
		SLA:        sla,
		WriteToken: hex.EncodeToString(b[:]),
		Logger:     slog.New(slog.DiscardHandler),
	}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.DatabaseURL == "" {
		cfg.DatabaseURL = pgtest.NewDatabase(t)
	}
	s := &Server{t: t, cfg: cfg, Token: cfg.WriteToken, DatabaseURL: cfg.DatabaseURL}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("apitest: listen: %v", err)
	}
	s.addr = ln.Addr().String()
	s.URL = "http://" + s.addr
	if err := s.start(ln); err != nil {
		t.Fatalf("apitest: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

func (s *Server) start(ln net.Listener) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	svc, err := service.New(ctx, s.cfg)
	if err != nil {
		_ = ln.Close()
		return err
	}
	hs := httptest.NewUnstartedServer(svc.Handler)
	_ = hs.Listener.Close()
	hs.Listener = ln
	hs.Start()
	s.mu.Lock()
	s.http, s.svc = hs, svc
	s.mu.Unlock()
	return nil
}

// Close stops the API: its address refuses connections until Restart.
// It is safe to call more than once.
func (s *Server) Close() {
	s.mu.Lock()
	hs, svc := s.http, s.svc
	s.http, s.svc = nil, nil
	s.mu.Unlock()
	if hs == nil {
		return
	}
	svc.Hub.Close()
	hs.CloseClientConnections()
	hs.Close()
	svc.Close()
}

// Restart brings a closed API back on the same address with the same
// database (it closes a running one first).
func (s *Server) Restart() {
	s.t.Helper()
	s.Close()
	var ln net.Listener
	var err error
	deadline := time.Now().Add(10 * time.Second)
	for {
		if ln, err = net.Listen("tcp", s.addr); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		s.t.Fatalf("apitest: relisten on %s: %v", s.addr, err)
	}
	if err := s.start(ln); err != nil {
		s.t.Fatalf("apitest: restart: %v", err)
	}
}

// Client returns an HTTP client with a timeout for talking to the server.
func (s *Server) Client() *http.Client { return &http.Client{Timeout: 30 * time.Second} }
