package main

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/crowsnest-dev/crowsnest/api/cli"

	"github.com/crowsnest-dev/crowsnest/api/memlimit"
	"github.com/crowsnest-dev/crowsnest/matcher/internal/dbserve"
	"github.com/crowsnest-dev/crowsnest/matcher/internal/events"
	"github.com/crowsnest-dev/crowsnest/matcher/internal/metrics"
	"github.com/crowsnest-dev/crowsnest/matcher/internal/vulndb"
)

// deps are what serve takes from its caller besides flags (tests inject a
// listener and watch activations).
type deps struct {
	listener net.Listener // nil: listen on --listen
	log      io.Writer
	getenv   func(string) string // nil: os.Getenv
	// onActivate sees every activated DB, after serve's own handling.
	onActivate func(vulndb.DB)
}

// serve runs the matcher until ctx ends: the DB store, the fetch schedule
// and the HTTP server. Everything it starts is stopped before it returns.
func serve(ctx context.Context, o Options, d deps) error {
	log, err := cli.NewLogger(o.LogLevel, o.LogFormat, d.log)
	if err != nil {
		return err
	}
	getenv := d.getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	limit, source, err := memlimit.Set(getenv, memlimit.CgroupFile)
	if err != nil {
		return err
	}
	if limit > 0 {
		log.Info("go memory limit set", "bytes", limit, "from", source, "gcPercent", setGCPercent(getenv, limit))
	}
	auth, err := adminAuth(o.AdminTokenFile)
	if err != nil {
		return err
	}
	w := &wiring{log: log}
	store, err := vulndb.Open(o.DataDir, vulndb.Options{
		Limits: vulndb.Limits{MaxArchiveBytes: o.MaxArchiveBytes, MaxDBBytes: o.MaxDBBytes, MaxImportTime: o.ImportTimeout},
		Upstream: vulndb.Upstream{
			URL:             o.UpstreamURL,
			AllowInsecure:   o.AllowInsecureUpstream,
			ListingTimeout:  o.ListingTimeout,
			DownloadTimeout: o.DownloadTimeout,
		},
		OnActivate: func(db vulndb.DB) { onActivate(db, w, d.onActivate) },
		Logger:     log,
	})
	if err != nil {
		return err
	}
	defer store.Close()
	w.store = store
	m := metrics.New(store, nil)

	// Events and re-matching run until serve returns, after the HTTP server
	// and the fetch loop stopped, so that an activation they made is handled.
	bgCtx, stopBG := context.WithCancel(context.WithoutCancel(ctx))
	var pubDone chan struct{}
	var rematchDone <-chan struct{}
	var pub *events.Publisher
	defer func() {
		stopBG()
		if !waitFor(rematchDone, o.ShutdownTimeout) {
			log.Warn("exiting with a rematch pass stopping; it resumes at the next start")
		}
		if pub != nil {
			waitFor(pubDone, o.ShutdownTimeout)
			pub.Close()
		}
	}()
	if pub, err = w.startEvents(o, m); err != nil {
		return err
	}
	if pub != nil {
		pubDone = make(chan struct{})
		go func() {
			defer close(pubDone)
			pub.Run(bgCtx)
		}()
	}
	switch {
	case o.ResultsAPIURL == "" || o.ResultsAPITokenFile == "":
		log.Info("rematch disabled: --results-api-url and --results-api-token-file are both needed; stored reports are not re-matched when the DB changes")
	default:
		if rematchDone, err = w.startRematch(bgCtx, o, m); err != nil {
			return err
		}
		log.Info("rematch enabled", "results_api", vulndb.Redact(o.ResultsAPIURL), "concurrency", o.RematchConcurrency)
	}
	if db, ok := store.Active(); ok {
		log.Info("vulnerability DB loaded", "db", db.ID, "built", db.Built, "schema", db.Schema)
		// Announce it unless it was (a restart may have come between the
		// activation and its event), and finish or confirm its pass (the
		// progress file tells a finished pass from an interrupted one).
		w.activated(db)
	}

	ln := d.listener
	if ln == nil {
		if ln, err = net.Listen("tcp", o.Listen); err != nil {
			return err
		}
	}
	srv := &http.Server{
		Handler:           routes(store, m, auth, o, log),
		ReadHeaderTimeout: 10 * time.Second,
		// An archive download or upload may take this long, no longer.
		ReadTimeout:  o.DownloadTimeout,
		WriteTimeout: o.DownloadTimeout,
		IdleTimeout:  2 * time.Minute,
		ErrorLog:     slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	log.Info("matcher serving", "addr", ln.Addr().String(), "data_dir", o.DataDir,
		"upstream", vulndb.Redact(o.UpstreamURL), "check_interval", o.CheckInterval.String())

	loopCtx, stopLoop := context.WithCancel(ctx)
	loopDone := make(chan struct{})
	go func() {
		defer close(loopDone)
		if o.UpstreamURL != "" {
			fetchLoop(loopCtx, store, m, o.CheckInterval, log)
		}
	}()

	select {
	case err = <-serveErr:
		err = fmt.Errorf("http server: %w", err)
	case <-ctx.Done():
	}
	stopLoop()
	shutCtx, cancel := context.WithTimeout(context.Background(), o.ShutdownTimeout)
	defer cancel()
	if serr := srv.Shutdown(shutCtx); serr != nil && err == nil {
		err = fmt.Errorf("shutdown: %w", serr)
	}
	select {
	case <-loopDone:
	case <-shutCtx.Done():
		// An import mid-hydration: the data directory stays consistent
		// whatever point the process exits at.
		log.Warn("exiting with a DB import in progress")
	}
	log.Info("matcher stopped")
	return err
}

// onActivate runs for every DB that becomes active (fetched or uploaded):
// it queues crowsnest.vulndb.updated and hands the DB to the re-match
// Runner, neither of which waits. The store has logged the activation
// already.
func onActivate(db vulndb.DB, w *wiring, next func(vulndb.DB)) {
	w.activated(db)
	if next != nil {
		next(db)
	}
}

func routes(store *vulndb.Store, m *metrics.Metrics, auth dbserve.Authorizer, o Options, log *slog.Logger) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if _, ok := store.Active(); !ok {
			http.Error(w, "no vulnerability DB yet", http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ok\n")
	})
	if o.Metrics {
		mux.Handle("GET /metrics", m.Handler())
	}
	dbs := dbserve.New(store, dbserve.DefaultPrefix)
	dbs.Served = m.Served
	mux.Handle(dbserve.DefaultPrefix+"/", dbs)
	mux.Handle(dbserve.ImportPath, &dbserve.ImportHandler{Store: store, Auth: auth, MaxBytes: o.MaxArchiveBytes, Logger: log})
	return mux
}

func fetchLoop(ctx context.Context, store *vulndb.Store, m *metrics.Metrics, every time.Duration, log *slog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		res, err := store.Fetch(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			m.Fetched(metrics.FetchError)
			log.Warn("fetch vulnerability DB", "error", err)
		case res.Updated:
			m.Fetched(metrics.FetchUpdated)
		default:
			m.Fetched(metrics.FetchCurrent)
			log.Debug("vulnerability DB is current", "built", res.DB.Built)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// adminAuth checks upload tokens against the token in file; with no file
// every upload is refused. (In a cluster, results-api's admin token or a
// TokenReview fills the same dbserve.Authorizer.)
func adminAuth(file string) (dbserve.Authorizer, error) {
	if file == "" {
		return nil, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("--admin-token-file: %w", err)
	}
	token := []byte(strings.TrimSpace(string(b)))
	if len(token) == 0 {
		return nil, errors.New("--admin-token-file is empty")
	}
	return dbserve.AuthorizerFunc(func(_ context.Context, got string) error {
		if subtle.ConstantTimeCompare([]byte(got), token) != 1 {
			return dbserve.ErrUnauthenticated
		}
		return nil
	}), nil
}
