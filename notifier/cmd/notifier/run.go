package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crowsnest-dev/crowsnest/api/cli"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/crowsnest-dev/crowsnest/api/buildinfo"
	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	"github.com/crowsnest-dev/crowsnest/api/memlimit"
	"github.com/crowsnest-dev/crowsnest/notifier/internal/config"
	"github.com/crowsnest-dev/crowsnest/notifier/internal/engine"
	"github.com/crowsnest-dev/crowsnest/notifier/internal/metrics"
	"github.com/crowsnest-dev/crowsnest/notifier/internal/receiver"
	"github.com/crowsnest-dev/crowsnest/notifier/internal/state"
)

// deps are what run takes besides flags (tests inject a listener).
type deps struct {
	stdout, stderr io.Writer
	listener       net.Listener // nil: listen on --listen
	getenv         func(string) string
	metrics        *metrics.Metrics // nil: new ones
}

// sealInterval is the longest the sealer sleeps: a debounce window closes
// at most this late.
const sealInterval = time.Second

// run runs the notifier until ctx ends; everything it starts is stopped
// before it returns. With --version it only prints the build.
func run(ctx context.Context, o Options, d deps) (err error) {
	// Stopped while starting (opening its state, waiting for the stream
	// or its consumer): a clean stop, as a stop while consuming is, not
	// the step's "context canceled".
	stopped := ctx
	defer func() {
		if err != nil && stopped.Err() != nil && errors.Is(err, context.Canceled) {
			err = nil
		}
	}()
	if o.Version {
		_, err := fmt.Fprintln(d.stdout, buildinfo.String("notifier"))
		return err
	}
	log, err := cli.NewLogger(o.LogLevel, o.LogFormat, d.stderr)
	if err != nil {
		return err
	}
	cfg, err := config.Load(o.Config)
	if err != nil {
		return err
	}
	m := d.metrics
	if m == nil {
		m = metrics.New()
	}
	var dry io.Writer
	if o.DryRun {
		dry = d.stdout
	}
	if o.CheckConfig {
		if _, err := receiver.New(receiver.Options{Config: cfg, Metric: m, Log: log}); err != nil {
			return err
		}
		fmt.Fprintf(d.stdout, "config %s: %d receivers, %d routes: ok\n", o.Config, len(cfg.Receivers), len(cfg.Routes))
		return nil
	}
	if d.getenv != nil {
		if limit, source, err := memlimit.Set(d.getenv, memlimit.CgroupFile); err != nil {
			return err
		} else if limit > 0 {
			log.Info("go memory limit set", "bytes", limit, "from", source)
		}
	}
	copts, err := o.NATS.Options()
	if err != nil {
		return err
	}
	nc, err := nats.Connect(o.NATSURL, append(copts, nats.Name("crowsnest-notifier"), nats.MaxReconnects(-1),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { log.Error("nats", "error", err) }))...)
	if err != nil {
		return fmt.Errorf("connect to nats: %w", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	store, err := state.Open(ctx, js, o.StateMaxBytes)
	if err != nil {
		return err
	}
	eng, err := engine.New(ctx, engine.Options{Config: cfg, Store: store, Log: log, Metric: m, NotifyMaxAge: o.NotifyMaxAge})
	if err != nil {
		return err
	}
	disp, err := receiver.New(receiver.Options{Config: cfg, Store: store, Log: log, Metric: m, Dashboard: o.DashboardURL,
		DryRun: dry, MinBackoff: o.MinBackoff, MaxBackoff: o.MaxBackoff})
	if err != nil {
		return err
	}

	ln := d.listener
	if ln == nil {
		if ln, err = net.Listen("tcp", o.Listen); err != nil {
			return fmt.Errorf("listen: %w", err)
		}
	}
	var ready atomic.Bool
	srv := &http.Server{Handler: routes(m, &ready), ReadHeaderTimeout: 10 * time.Second}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server", "error", err)
		}
	})
	defer func() {
		sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer scancel()
		_ = srv.Shutdown(sctx)
	}()
	wg.Go(func() { disp.Run(ctx) })
	wg.Go(func() { sealLoop(ctx, eng, disp, store, log) })

	cons, err := consumer(ctx, js, o.Consumer, log)
	if err != nil {
		return err
	}
	ready.Store(true)
	log.Info("notifier running", "consumer", o.Consumer, "receivers", len(cfg.Receivers), "routes", len(cfg.Routes), "dry_run", o.DryRun)
	return consume(ctx, cons, eng, m, log)
}

func routes(m *metrics.Metrics, ready *atomic.Bool) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !ready.Load() {
			http.Error(w, "not consuming yet", http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ok\n")
	})
	return mux
}

// consumer creates or updates the durable consumer, waiting for the
// stream (its publishers create it) until ctx ends.
func consumer(ctx context.Context, js jetstream.JetStream, name string, log *slog.Logger) (jetstream.Consumer, error) {
	cfg := jetstream.ConsumerConfig{
		Durable:        name,
		Description:    "crowsnest notifier",
		FilterSubjects: engine.Subjects,
		AckPolicy:      jetstream.AckExplicitPolicy,
		DeliverPolicy:  jetstream.DeliverAllPolicy,
		AckWait:        time.Minute,
		MaxAckPending:  64,
	}
	for wait := time.Second; ; wait = min(2*wait, 30*time.Second) {
		// A subject the user may not publish gets no answer at all (the
		// server reports the violation asynchronously, logged by the
		// connection's error handler): bound each attempt.
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		c, err := js.CreateOrUpdateConsumer(actx, eventsv1.StreamName, cfg)
		cancel()
		if err == nil {
			return c, nil
		}
		if !errors.Is(err, jetstream.ErrStreamNotFound) {
			return nil, fmt.Errorf("create consumer %s: %w", name, err)
		}
		log.Info("waiting for the stream", "stream", eventsv1.StreamName, "retry_in", wait)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
	}
}

// consume handles messages one at a time, in stream order, and
// acknowledges each only after its effects are in the store.
func consume(ctx context.Context, cons jetstream.Consumer, eng *engine.Engine, m *metrics.Metrics, log *slog.Logger) error {
	it, err := cons.Messages(jetstream.PullMaxMessages(16))
	if err != nil {
		return fmt.Errorf("consume: %w", err)
	}
	stop := context.AfterFunc(ctx, it.Stop)
	defer stop()
	defer it.Stop()
	for {
		msg, err := it.Next()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, jetstream.ErrMsgIteratorClosed) {
				return nil
			}
			return fmt.Errorf("next message: %w", err)
		}
		err = eng.Handle(ctx, msg.Subject(), msg.Data())
		switch {
		case err == nil:
			if err := msg.DoubleAck(ctx); err != nil && ctx.Err() == nil {
				log.Warn("ack", "subject", msg.Subject(), "error", err)
			}
		case errors.Is(err, engine.ErrInvalid):
			log.Warn("invalid event dropped", "subject", msg.Subject(), "error", err)
			_ = msg.Term()
		default:
			if ctx.Err() != nil {
				return nil
			}
			m.Events.WithLabelValues(msg.Subject(), "error").Inc()
			log.Error("handle event", "subject", msg.Subject(), "error", err)
			_ = msg.NakWithDelay(5 * time.Second)
		}
	}
}

// sealLoop closes due debounce windows and hands the sealed groups to the
// receivers; at start it re-offers the groups a previous run sealed and
// did not deliver. A group a full queue refused is offered again.
func sealLoop(ctx context.Context, eng *engine.Engine, disp *receiver.Dispatcher, store *state.Store, log *slog.Logger) {
	var backlog []*state.Group
	ids, err := store.SealedIDs(ctx)
	if err != nil {
		log.Error("list sealed groups", "error", err)
	}
	for _, id := range ids {
		if g, ok, err := store.Sealed(ctx, id); err != nil {
			log.Error("read sealed group", "group", id, "error", err)
		} else if ok {
			backlog = append(backlog, g)
		}
	}
	for {
		sealed, err := eng.Seal(ctx)
		if err != nil && ctx.Err() == nil {
			log.Error("seal groups", "error", err)
		}
		pending := append(backlog, sealed...)
		backlog = nil
		for _, g := range pending {
			if !disp.Enqueue(g) {
				backlog = append(backlog, g)
			}
		}
		wait := sealInterval
		if due := eng.NextDue(); !due.IsZero() {
			wait = min(wait, max(time.Until(due), 10*time.Millisecond))
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}
