package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/authn"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/hub"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/metrics"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/snapshot"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
)

// Notifier is told of each committed report change (the event bus: with
// NATS it wakes the outbox relay, which publishes the event the store wrote
// in the change's transaction; without, it hands the event to the local
// WebSocket hub). Its methods must not block on the network.
type Notifier interface {
	ReportStored(s report.Summary)
	ReportDeleted(s report.Summary)
	FindingsChanged(c report.Change)
}

// Config wires the server's parts.
type Config struct {
	Store    *store.Store
	Hub      *hub.Hub
	Notifier Notifier
	Auth     Authenticator
	// Reads, when set, authorizes every read (--read-auth=kubernetes);
	// nil serves reads to anyone (open).
	Reads ReadAuthorizer
	// ReadRecheck is how often a WebSocket client's read access is checked
	// again (default DefaultReadRecheck).
	ReadRecheck time.Duration
	Metrics     *metrics.Metrics
	// NoMetrics leaves /metrics out of the routes: it is served on a
	// listener of its own (--metrics-listen), so an Ingress in front of the
	// API never exposes it.
	NoMetrics bool
	// Scrapers, when set, decides who may get /metrics
	// (--metrics-auth=kubernetes); nil serves it to anyone.
	Scrapers    MetricsAuthorizer
	MaxBOMBytes int64
	// Limits bound request time and the memory of uploads and downloads.
	Limits Limits
	// Checks are /readyz's checks (nil: Postgres only).
	Checks []Check
	// Exceptions, when set, are the triage decisions applied to reads
	// (--exceptions); nil applies none.
	Exceptions ExceptionSource
	// SLA is the remediation policy findings are overdue by (--sla).
	SLA report.SLA
	// Now is the clock of finding ages and deadlines (default time.Now).
	Now func() time.Time
	// Changes counts this replica's writes to what /stats reads; New makes
	// one when nil. The server bumps it after each report it stores or
	// deletes; whatever else writes (the event bus's inventories) should
	// bump the same one, so that the next /stats computes afresh.
	Changes *snapshot.Generation
	// StatsMaxAge bounds how long a /stats snapshot is served (default
	// DefaultStatsMaxAge): the staleness of what this replica did not
	// write (other replicas' writes, scan states, the clock's overdue).
	StatsMaxAge time.Duration
	// UI serves everything outside /api, /healthz, /readyz and /metrics.
	UI     http.Handler
	Logger *slog.Logger
}

// Server serves the results API.
type Server struct {
	cfg    Config
	ingest *budget // uploads being read, parsed and stored
	read   *budget // BOM downloads and report details
	stats  statsCache
}

// New returns a server; call Routes (or Handler) to serve it.
func New(cfg Config) *Server {
	if cfg.MaxBOMBytes <= 0 {
		cfg.MaxBOMBytes = 32 << 20
	}
	if cfg.Metrics == nil {
		cfg.Metrics = metrics.New()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Hub == nil {
		cfg.Hub = hub.New(hub.Options{})
	}
	if cfg.Notifier == nil {
		cfg.Notifier = nopNotifier{}
	}
	if cfg.Auth == nil {
		cfg.Auth = authn.DenyWrites{}
	}
	if cfg.ReadRecheck <= 0 {
		cfg.ReadRecheck = DefaultReadRecheck
	}
	if cfg.Changes == nil {
		cfg.Changes = &snapshot.Generation{}
	}
	if cfg.StatsMaxAge <= 0 {
		cfg.StatsMaxAge = DefaultStatsMaxAge
	}
	cfg.Limits.defaults()
	s := &Server{cfg: cfg,
		ingest: newBudget("ingest", cfg.Limits.IngestMemory, cfg.Limits.MemoryWait, cfg.Metrics),
		read:   newBudget("read", cfg.Limits.ReadMemory, cfg.Limits.MemoryWait, cfg.Metrics)}
	s.stats = newStatsCache(cfg.StatsMaxAge, s.now)
	return s
}

// Handler returns the routed handler.
func (s *Server) Handler() http.Handler { return s.Routes() }

type nopNotifier struct{}

func (nopNotifier) ReportStored(report.Summary)   {}
func (nopNotifier) ReportDeleted(report.Summary)  {}
func (nopNotifier) FindingsChanged(report.Change) {}

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain")
	_, _ = w.Write([]byte("ok\n"))
}

// A Check is one check of /readyz.
type Check struct {
	Name string
	// Informational checks are listed by /readyz?verbose but never make
	// the API unready: it serves without them.
	Informational bool
	Run           func(ctx context.Context) error
}

// readyz runs every check: 503 when one that is not informational fails.
// The body names the failed checks; with ?verbose it lists every check,
// one line each ("[+]name ok", "[-]name failed: …"), as kube-apiserver's
// /readyz?verbose does; with read authorization, only to authenticated
// callers.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	checks := s.cfg.Checks
	if checks == nil {
		checks = []Check{{Name: "postgres", Run: s.cfg.Store.Ping}}
	}
	var list strings.Builder
	var failed []string
	for _, c := range checks {
		err := c.Run(r.Context())
		switch {
		case err == nil:
			fmt.Fprintf(&list, "[+]%s ok\n", c.Name)
		case c.Informational:
			fmt.Fprintf(&list, "[-]%s failed (informational, not counted): %v\n", c.Name, err)
		default:
			fmt.Fprintf(&list, "[-]%s failed: %v\n", c.Name, err)
			failed = append(failed, c.Name+": "+err.Error())
		}
	}
	_, verbose := r.URL.Query()["verbose"]
	if verbose && s.cfg.Reads != nil {
		// The checks' errors name hosts and states: only for callers who
		// may read. Probes without credentials still get the verdict.
		_, err := s.cfg.Reads.AuthorizeRead(r)
		verbose = err == nil
	}
	w.Header().Set("Content-Type", "text/plain")
	if len(failed) > 0 {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	switch {
	case verbose && len(failed) > 0:
		_, _ = w.Write([]byte(list.String() + "readyz check failed\n"))
	case verbose:
		_, _ = w.Write([]byte(list.String() + "readyz check passed\n"))
	case len(failed) > 0:
		_, _ = w.Write([]byte("not ready: " + strings.Join(failed, "; ") + "\n"))
	default:
		_, _ = w.Write([]byte("ok\n"))
	}
}

func (s *Server) metricsHandler() http.Handler {
	return ProtectMetrics(s.cfg.Metrics.Handler(), s.cfg.Scrapers)
}

// streamEvents hands the request to the hub, which refuses a client over
// its caps before the upgrade (429 for one address's cap, 503 for the
// total).
func (s *Server) streamEvents(w http.ResponseWriter, r *http.Request) {
	if err := s.cfg.Hub.ServeAccess(w, r, hub.PeerAddr(r), s.hubAccess(r)); err != nil {
		limit := "websocket_total"
		if errors.Is(err, hub.ErrTooManyFromAddr) {
			limit = "websocket_per_address"
		}
		s.cfg.Metrics.LimitRefusals.WithLabelValues(limit).Inc()
		writeError(w, r, err)
	}
}
