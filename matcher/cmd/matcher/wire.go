package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/crowsnest-dev/crowsnest/matcher/internal/events"
	"github.com/crowsnest-dev/crowsnest/matcher/internal/metrics"
	"github.com/crowsnest-dev/crowsnest/matcher/internal/rematch"
	"github.com/crowsnest-dev/crowsnest/matcher/internal/vulndb"
)

// Where re-match progress and pending events live under --data-dir (the
// store keeps its DBs in its own subdirectories).
const (
	rematchDir = "rematch"
	eventsDir  = "events"
)

// wiring connects DB activations to the crowsnest.vulndb.updated event and
// to the re-match Runner, whose finished passes become
// crowsnest.rematch.done. Neither waits on NATS or results-api.
type wiring struct {
	store *vulndb.Store
	rec   *events.Recorder // nil: events off
	log   *slog.Logger

	mu     sync.Mutex
	latest chan vulndb.DB // capacity 1, newest wins; nil: re-match off
}

// activated runs for every activated DB, from the importing goroutine.
func (w *wiring) activated(db vulndb.DB) {
	w.announce(db)
	w.rematch(db)
}

// announce records crowsnest.vulndb.updated for db. The event's id derives
// from db, so announcing the active DB again at start-up queues nothing
// when it was queued before.
func (w *wiring) announce(db vulndb.DB) {
	if w.rec == nil {
		return
	}
	var prev *vulndb.DB
	if p, ok := w.store.Previous(); ok && p.ID != db.ID {
		prev = &p
	}
	ev, err := events.VulnDBUpdated(db, prev)
	if err == nil {
		err = w.rec.Record(ev)
	}
	if err != nil {
		w.log.Error("record vulndb.updated event", "db", db.ID, "error", err)
	}
}

// rematch hands db to the re-match feeder, replacing a DB it has not taken
// yet (only the newest matters).
func (w *wiring) rematch(db vulndb.DB) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.latest == nil {
		return
	}
	select {
	case <-w.latest:
	default:
	}
	w.latest <- db
}

// startRematch runs the re-match Runner until ctx ends; the returned
// channel closes when it and the feeder have stopped.
func (w *wiring) startRematch(ctx context.Context, o Options, m *metrics.Metrics) (<-chan struct{}, error) {
	done := make(chan struct{})
	dir := filepath.Join(o.DataDir, rematchDir)
	if err := mkdir(dir); err != nil {
		return nil, err
	}
	client := &trackedClient{
		Client:  &rematch.HTTPClient{BaseURL: o.ResultsAPIURL, TokenFile: o.ResultsAPITokenFile},
		started: m.RematchStarted,
	}
	fps, err := rematch.OpenFootprints(dir)
	if err != nil {
		return nil, err
	}
	skip := &rematch.Skip{
		Footprints: fps,
		Previous: func() (string, bool) {
			p, ok := w.store.Previous()
			return p.Dir, ok
		},
		Sample:    o.RematchSkipCheck,
		SampleMax: o.RematchSkipCheckMax,
		Disabled:  !o.RematchSkip,
	}
	if o.RematchSkipCheck == 0 {
		skip.Sample = -1 // the first skippable report of a run only
	}
	runner := &rematch.Runner{
		Pass: &rematch.Pass{Client: client, Dir: dir, Concurrency: o.RematchConcurrency, Metrics: m, Logger: w.log, Skip: skip},
		OnDone: func(r rematch.Result) {
			if w.rec == nil {
				return
			}
			ev, err := events.RematchDone(r)
			if err == nil {
				err = w.rec.Record(ev)
			}
			if err != nil {
				w.log.Error("record rematch.done event", "db_built", r.DB.Built, "error", err)
			}
		},
		Logger: w.log,
	}
	w.mu.Lock()
	w.latest = make(chan vulndb.DB, 1)
	latest := w.latest
	w.mu.Unlock()

	dbs := make(chan *rematch.Matcher)
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := runner.Run(ctx, dbs); err != nil && ctx.Err() == nil {
			w.log.Error("rematch runner stopped", "error", err)
		}
	})
	probe := &rematch.Pass{Client: noListing{}, Dir: dir}
	wg.Go(func() { w.feed(ctx, latest, dbs, probe, o.RematchConcurrency) })
	go func() {
		wg.Wait()
		_ = fps.Close()
		close(done)
	}()
	return done, nil
}

// feed opens each DB handed over and passes it to the Runner, which owns
// it from then on. Opening happens here, not in the activation hook, so
// that an import never waits for it. The first DB is probed before (see
// recordFinished).
func (w *wiring) feed(ctx context.Context, latest <-chan vulndb.DB, dbs chan<- *rematch.Matcher, probe *rematch.Pass, concurrency int) {
	log := w.log
	first := true
	for {
		var db vulndb.DB
		select {
		case <-ctx.Done():
			return
		case db = <-latest:
		}
		m, err := rematch.Open(db.Dir, rematch.Options{MaxConcurrent: concurrency, Footprints: true})
		if err != nil {
			// Pruned already (a newer DB follows) or unreadable: the next
			// activation or restart tries again.
			log.Error("open vulnerability DB for rematch", "db", db.ID, "error", err)
			continue
		}
		if first {
			first = false
			w.recordFinished(ctx, probe, m)
		}
		select {
		case dbs <- m:
		case <-ctx.Done():
			_ = m.Close()
			return
		}
	}
}

// recordFinished records crowsnest.rematch.done for m's DB when the
// progress file says its pass finished: a process stopped between the
// pass's last progress save and its event would otherwise never publish
// it. The event's id is the one the pass's OnDone gave it, so an event
// already queued is not queued again. probe cannot list reports, so a pass
// that did not finish is left for the Runner, untouched.
func (w *wiring) recordFinished(ctx context.Context, probe *rematch.Pass, m *rematch.Matcher) {
	if w.rec == nil {
		return
	}
	res, err := probe.Run(ctx, m)
	if err != nil || !res.Repeated {
		return
	}
	ev, err := events.RematchDone(res)
	if err == nil {
		err = w.rec.Record(ev)
	}
	if err != nil {
		w.log.Error("record rematch.done event", "db_built", res.DB.Built, "error", err)
	}
}

// noListing is the probe's Client: any pass that has work to do stops at
// once.
type noListing struct{ rematch.Client }

var errProbe = errors.New("probe lists no reports")

func (noListing) ListReports(context.Context, string, int) (rematch.Page, error) {
	return rematch.Page{}, errProbe
}

// trackedClient marks a pass in progress when it lists reports, which a
// pass found finished already (Result.Repeated) never does.
type trackedClient struct {
	rematch.Client
	started func()
}

func (c *trackedClient) ListReports(ctx context.Context, cursor string, limit int) (rematch.Page, error) {
	c.started()
	return c.Client.ListReports(ctx, cursor, limit)
}

// startEvents opens the pending events file and connects to NATS in the
// background; without --nats-url events are off.
func (w *wiring) startEvents(o Options, m *metrics.Metrics) (*events.Publisher, error) {
	if o.NATSURL == "" {
		w.log.Info("events disabled: no --nats-url; crowsnest.vulndb.updated and crowsnest.rematch.done are not published")
		return nil, nil
	}
	connect, err := o.NATS.Options()
	if err != nil {
		return nil, err
	}
	outbox, err := events.OpenOutbox(filepath.Join(o.DataDir, eventsDir))
	if err != nil {
		return nil, err
	}
	pub, err := events.Connect(outbox, events.Options{URL: o.NATSURL, Connect: connect, Metrics: m, Logger: w.log})
	if err != nil {
		return nil, err
	}
	w.rec = &events.Recorder{Outbox: outbox, Metrics: m, Logger: w.log}
	m.Pending(outbox.Len())
	return pub, nil
}

func mkdir(dir string) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	return nil
}

// waitFor waits until done is closed or d has passed; false on timeout.
func waitFor(done <-chan struct{}, d time.Duration) bool {
	if done == nil {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}
