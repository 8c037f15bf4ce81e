// Package service wires the results API's parts — store, event bus,
// WebSocket hub, metrics and HTTP routes — into one handler. The binary and
// the apitest harness both build the API through it, so tests run exactly
// what ships.
package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"k8s.io/client-go/kubernetes"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/authn"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/authz"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/events"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/exception"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/httpapi"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/hub"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/metrics"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/snapshot"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/vulnmetrics"
)

// Config is everything the service needs.
type Config struct {
	DatabaseURL string
	NATSURL     string        // empty: events only go to local WebSocket clients
	NATSConnect []nats.Option // NATS credentials (eventsv1.Credentials.Options)
	WriteToken  string        // empty: writes are refused (403)
	// Auth, when set, decides on write tokens instead of WriteToken.
	Auth httpapi.Authenticator
	// Gate, when set (the binary's --auth-mode=tokenreview), decides on
	// writes by scope: the static WriteToken as admin, Pod-bound uploads,
	// rematch and admin by TokenReview + SubjectAccessReview. New fills in
	// its Static token and HasReport.
	Gate *authz.Gate
	// Reads, when set, authorizes reads (the binary's
	// --read-auth=kubernetes); nil serves them to anyone (open), which is
	// what in-process harnesses of other modules rely on.
	Reads *ReadAuth
	// Exceptions, when set, applies the cluster's triage exceptions to
	// reads; nil applies none.
	Exceptions *Exceptions
	// SeparateMetrics leaves /metrics out of Handler; the caller serves
	// Metrics.Handler() on a listener of its own.
	SeparateMetrics bool
	// Scrapers, when set, decides who may get /metrics, on Handler and on
	// MetricsHandler (the binary's --metrics-auth=kubernetes); nil serves
	// metrics to anyone.
	Scrapers    httpapi.MetricsAuthorizer
	MaxBOMBytes int64
	// Limits bound request time and the memory of uploads and downloads.
	Limits httpapi.Limits
	// StatementTimeout is Postgres' statement_timeout (0: the store's default).
	StatementTimeout time.Duration
	// MaxWebSocketClients and MaxWebSocketClientsPerAddr cap the hub's
	// clients (0: the hub's defaults).
	MaxWebSocketClients, MaxWebSocketClientsPerAddr int
	// ReportRetention, when positive, deletes the reports of digests no
	// namespace has run for longer (checked every RetentionInterval,
	// default 10 minutes), publishing nothing (store.PruneReports). Zero
	// keeps every report.
	ReportRetention   time.Duration
	RetentionInterval time.Duration
	// VulnMetrics, when its Interval is positive, exports the fleet's
	// vulnerability metrics, refreshed every Interval and soon after each
	// report change and inventory this replica applies; zero: off.
	VulnMetrics vulnmetrics.Options
	// SLA is the remediation policy findings are overdue by, in the API
	// and the overdue metrics (the binary's --sla; zero: no deadlines).
	SLA report.SLA
	// Now is the clock of finding ages and deadlines (default time.Now).
	Now func() time.Time
	// StatsMaxAge bounds how long a /stats snapshot is served (0:
	// httpapi.DefaultStatsMaxAge); a report or inventory change this
	// replica applies ends it at once.
	StatsMaxAge time.Duration
	// OnStatement, when set, is called after every SQL statement with its
	// context (tests and benchmarks count them).
	OnStatement func(ctx context.Context)
	// EventTiming tunes the event bus (zero: its defaults).
	EventTiming    events.Timing
	OriginPatterns []string
	UI             http.Handler
	Logger         *slog.Logger
}

// ReadAuth configures read authorization: New builds the authz.Reader
// with the static admin token and the inventory's namespaces.
type ReadAuth struct {
	Reviewer authz.Reviewer // TokenReview of read tokens
	Audience string         // the audience read tokens must carry
	Client   kubernetes.Interface
	// Writers, when set, names the rematch service accounts, which read
	// everything.
	Writers *authz.Authorizer
	Proxy   *authz.Proxy // nil: no authenticating proxy
	Options authz.ReadOptions
	// AllNamespaces reviews every inventory namespace for a reader who may
	// not list cluster-wide (the binary's --read-auth-namespaces=all, for
	// clusters where an authorizer other than RBAC grants reads). False,
	// the default, reviews only those where a RoleBinding names the
	// reader (authz.RBACIndex, watching RoleBindings).
	AllNamespaces bool
	// Recheck is how often a WebSocket client's access is checked again
	// (0: httpapi.DefaultReadRecheck).
	Recheck time.Duration
	// Now is the clock tokens' expiry is checked against (default
	// time.Now; tests move it past a real token's expiry).
	Now func() time.Time
}

// Service is a running results API without its listener.
type Service struct {
	Handler http.Handler
	Store   *store.Store
	Hub     *hub.Hub
	Bus     *events.Bus
	Metrics *metrics.Metrics
	// MetricsHandler serves Metrics behind Config.Scrapers, for a listener
	// of its own (Config.SeparateMetrics).
	MetricsHandler http.Handler

	stopRetention context.CancelFunc
	retention     sync.WaitGroup
	stopVulns     context.CancelFunc
	vulns         sync.WaitGroup
	stopRBAC      func()
	stopExcept    func()
	stopRiskfill  context.CancelFunc
	riskfill      sync.WaitGroup
}

// New opens the store (applying migrations), connects the event bus and
// builds the routes.
func New(ctx context.Context, c Config) (*Service, error) {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	m := metrics.New()
	if c.Now == nil {
		c.Now = time.Now
	}
	c.VulnMetrics.SLA = c.SLA
	if c.VulnMetrics.Now == nil {
		c.VulnMetrics.Now = c.Now
	}
	// With NATS, report changes write their events into the outbox, from
	// which the bus's relay publishes them; without, there is nobody to
	// publish them and the bus hands them to the local hub instead.
	// With exceptions, findings.changed events mark where each listed
	// finding is suppressed: the announcer reads the watcher's current set
	// (started below, before any request can store a report).
	var announcer store.Announcer
	var watcher atomic.Pointer[exception.Watcher]
	if c.NATSURL != "" {
		a := events.Announcer{}
		if c.Exceptions != nil {
			a.Exceptions = func() *exception.Set {
				if w := watcher.Load(); w != nil {
					return w.Set()
				}
				return nil
			}
		}
		announcer = a
	}
	st, err := store.Open(ctx, c.DatabaseURL, store.Options{StatementTimeout: c.StatementTimeout, Announcer: announcer,
		OnError: func(op string) { m.DBErrors.WithLabelValues(op).Inc() }, OnStatement: c.OnStatement})
	if err != nil {
		return nil, err
	}
	h := hub.New(hub.Options{
		OriginPatterns: c.OriginPatterns, Logger: c.Logger,
		MaxClients: c.MaxWebSocketClients, MaxClientsPerAddr: c.MaxWebSocketClientsPerAddr,
		OnClients: func(n int) { m.WebSocketClients.Set(float64(n)) },
		OnDrop:    m.WebSocketDropped.Inc,
	})
	// With exceptions, the vulnerability metrics count the active
	// findings, as the API's views do: the refresher asks the API server
	// (set below, before the refresher runs) what the exceptions suppress.
	var api *httpapi.Server
	vo := c.VulnMetrics
	if c.Exceptions != nil {
		vo.Suppress = func() vulnmetrics.Suppression { return api.VulnMetricsSuppression() }
	}
	vulns := newVulnMetrics(st, m, vo, c.Logger)
	// changes counts this replica's writes for /stats's snapshots, as
	// vulns.Trigger does for the metrics (the routes bump it on reports).
	changes := &snapshot.Generation{}
	bus, err := events.Start(ctx, events.Options{URL: c.NATSURL, Connect: c.NATSConnect, Store: st, Hub: h, Metrics: m, Logger: c.Logger,
		Timing: c.EventTiming, OnInventory: func(string) { changes.Bump(); vulns.Trigger() }})
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	var auth httpapi.Authenticator = authn.DenyWrites{}
	var static *authn.StaticToken
	if c.WriteToken != "" {
		t, err := authn.NewStaticToken(c.WriteToken)
		if err != nil {
			bus.Close()
			_ = st.Close()
			return nil, fmt.Errorf("write token: %w", err)
		}
		static, auth = &t, t
	}
	switch {
	case c.Gate != nil:
		if err := c.Gate.Check(); err != nil {
			bus.Close()
			_ = st.Close()
			return nil, fmt.Errorf("write scopes: %w", err)
		}
		c.Gate.Static = static // the admin token works in every mode
		c.Gate.HasReport = func(ctx context.Context, digest string) (bool, error) {
			_, err := st.GetSummary(ctx, digest)
			if errors.Is(err, store.ErrNotFound) {
				return false, nil
			}
			return err == nil, err
		}
		auth = c.Gate
	case c.Auth != nil:
		auth = c.Auth
	}
	var reads httpapi.ReadAuthorizer
	var recheck time.Duration
	stopRBAC := func() {}
	if c.Reads != nil {
		recheck = c.Reads.Recheck
		o := c.Reads.Options
		o.Namespaces = st.Namespaces
		if !c.Reads.AllNamespaces {
			o.Candidates, stopRBAC, err = startRBACIndex(ctx, c.Reads.Client)
			if err != nil {
				bus.Close()
				_ = st.Close()
				return nil, err
			}
		}
		scopes, err := authz.NewReadAuthorizer(c.Reads.Client, o)
		if err != nil {
			stopRBAC()
			bus.Close()
			_ = st.Close()
			return nil, err
		}
		reads = &authz.Reader{Static: static, Reviewer: c.Reads.Reviewer, Audience: c.Reads.Audience, Writers: c.Reads.Writers,
			Scopes: scopes, Proxy: c.Reads.Proxy, Now: c.Reads.Now}
	}
	var except httpapi.ExceptionSource
	stopExcept := func() {}
	if c.Exceptions != nil {
		w, stop, err := startExceptions(ctx, c.Exceptions)
		if err != nil {
			stopRBAC()
			bus.Close()
			_ = st.Close()
			return nil, err
		}
		actx, stopAudit := context.WithCancel(context.WithoutCancel(ctx))
		var audits sync.WaitGroup
		audits.Go(func() { auditExceptions(actx, w, st, m, c.Exceptions.AuditInterval, c.Logger) })
		except, stopExcept = w, func() { stopAudit(); audits.Wait(); stop() }
		watcher.Store(w)
	}
	api = httpapi.New(httpapi.Config{Exceptions: except,
		Reads: reads, ReadRecheck: recheck, Store: st, Hub: h, Notifier: triggering{bus, vulns}, Auth: auth, Metrics: m, NoMetrics: c.SeparateMetrics, Scrapers: c.Scrapers, MaxBOMBytes: c.MaxBOMBytes, Limits: c.Limits, UI: c.UI, Logger: c.Logger,
		Checks: checks(st, bus, c.NATSURL != ""), SLA: c.SLA, Now: c.Now, Changes: changes, StatsMaxAge: c.StatsMaxAge,
	})
	svc := &Service{Handler: api.Handler(), Store: st, Hub: h, Bus: bus, Metrics: m, MetricsHandler: httpapi.ProtectMetrics(m.Handler(), c.Scrapers),
		stopRetention: func() {}, stopVulns: func() {}, stopRBAC: stopRBAC, stopExcept: stopExcept}
	if vulns != nil {
		vctx, cancel := context.WithCancel(ctx)
		svc.stopVulns = cancel
		svc.vulns.Go(func() { vulns.Run(vctx) })
	}
	fctx, stopFill := context.WithCancel(context.WithoutCancel(ctx))
	svc.stopRiskfill = stopFill
	svc.riskfill.Go(func() { backfillRisk(fctx, st, c.Logger) })
	if c.ReportRetention > 0 {
		rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		svc.stopRetention = cancel
		svc.retention.Go(func() { prune(rctx, st, changes, c.ReportRetention, c.RetentionInterval, c.Logger) })
	}
	return svc, nil
}

// rbacSyncTimeout bounds the RBAC index's first list at start.
const rbacSyncTimeout = time.Minute

// startRBACIndex watches the cluster's RoleBindings for the read
// authorizer's candidate namespaces until the returned stop is called.
func startRBACIndex(ctx context.Context, client kubernetes.Interface) (func(id authz.Identity) ([]string, bool), func(), error) {
	x, err := authz.NewRBACIndex(client)
	if err != nil {
		return nil, nil, err
	}
	ictx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := func() { cancel(); x.Shutdown() }
	if err := x.Start(ictx, rbacSyncTimeout); err != nil {
		stop()
		return nil, nil, fmt.Errorf("%w; or review every namespace (--read-auth-namespaces=all)", err)
	}
	return x.Candidates, stop, nil
}

// prune deletes the reports of digests not running for longer than
// retention, at start and then every interval, until ctx ends. Replicas
// doing the same at once delete each report once.
func prune(ctx context.Context, st *store.Store, changes *snapshot.Generation, retention, interval time.Duration, log *slog.Logger) {
	if interval <= 0 {
		interval = 10 * time.Minute
	}
	for {
		n, err := st.PruneReports(ctx, time.Now().Add(-retention), 500)
		switch {
		case err != nil && ctx.Err() == nil:
			log.Warn("prune reports not running", "error", err)
		case n > 0:
			changes.Bump()
			log.Info("pruned reports of images not running", "reports", n, "retention", retention.String())
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}

// checks are /readyz's: the API is ready when Postgres answers. NATS is
// listed for information only: without it reports are still stored (their
// events wait in the outbox) and served.
func checks(st *store.Store, bus *events.Bus, nats bool) []httpapi.Check {
	c := []httpapi.Check{{Name: "postgres", Run: st.Ping}}
	if nats {
		c = append(c, httpapi.Check{Name: "nats", Informational: true, Run: bus.NATSStatus})
	}
	return c
}

// Close disconnects WebSocket clients, stops the bus and closes the store.
func (s *Service) Close() {
	s.stopRiskfill()
	s.riskfill.Wait()
	s.stopRBAC()
	s.stopExcept()
	s.stopRetention()
	s.retention.Wait()
	s.stopVulns()
	s.vulns.Wait()
	s.Hub.Close()
	s.Bus.Close()
	_ = s.Store.Close()
}
