package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	evv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/hub"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/metrics"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
)

// Durable is the name of the scan-status consumer shared by all replicas.
const Durable = "results-api-scans"

// Options configure the bus.
type Options struct {
	URL     string // empty: no NATS, events go to the local hub only
	Store   *store.Store
	Hub     *hub.Hub
	Metrics *metrics.Metrics
	Logger  *slog.Logger
	// Connect are extra connect options: the NATS credentials
	// (eventsv1.Credentials.Options).
	Connect    []nats.Option
	OutboxSize int           // default 1024
	RetryWait  time.Duration // default 1s
}

// Bus publishes report events and consumes operator events.
type Bus struct {
	o      Options
	nc     *nats.Conn
	js     jetstream.JetStream
	outbox chan outgoing
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

type outgoing struct {
	subject string
	ev      evv1.Event
}

// Start connects (without waiting for NATS to be reachable) and starts the
// publisher, the durable consumer and the fan-out subscription.
func Start(ctx context.Context, o Options) (*Bus, error) {
	if o.Metrics == nil {
		o.Metrics = metrics.New()
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.OutboxSize <= 0 {
		o.OutboxSize = 1024
	}
	if o.RetryWait <= 0 {
		o.RetryWait = time.Second
	}
	b := &Bus{o: o}
	if o.URL == "" {
		return b, nil
	}
	nc, err := nats.Connect(o.URL, append([]nats.Option{nats.Name("crowsnest-results-api"), nats.RetryOnFailedConnect(true),
		nats.MaxReconnects(-1), nats.ReconnectWait(o.RetryWait), nats.Timeout(5 * time.Second),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			o.Logger.Warn("nats disconnected", "error", err)
		}),
		nats.ReconnectHandler(func(*nats.Conn) { o.Logger.Info("nats reconnected") })}, o.Connect...)...)
	if err != nil {
		return nil, fmt.Errorf("connect nats: %w", err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	b.nc, b.js = nc, js
	b.outbox = make(chan outgoing, o.OutboxSize)
	if _, err := nc.Subscribe(evv1.StreamSubjects, b.fanOut); err != nil {
		nc.Close()
		return nil, fmt.Errorf("subscribe %s: %w", evv1.StreamSubjects, err)
	}
	ctx, b.cancel = context.WithCancel(context.WithoutCancel(ctx))
	b.wg.Add(2)
	go func() { defer b.wg.Done(); b.publishLoop(ctx) }()
	go func() { defer b.wg.Done(); b.consumeLoop(ctx) }()
	return b, nil
}

// Close stops the loops and drains the connection. Unsent events are dropped.
func (b *Bus) Close() {
	if b.nc == nil {
		return
	}
	b.cancel()
	b.wg.Wait()
	if n := len(b.outbox); n > 0 {
		b.o.Logger.Warn("dropping unsent events at shutdown", "count", n)
	}
	_ = b.nc.Drain()
}

// Ready reports whether NATS is connected (always nil without NATS).
func (b *Bus) Ready(context.Context) error {
	if b.nc == nil || b.nc.Status() == nats.CONNECTED {
		return nil
	}
	return fmt.Errorf("nats %s", b.nc.Status())
}

// ReportStored announces a committed report.
func (b *Bus) ReportStored(s report.Summary) {
	ev, err := storedEvent(s, time.Now())
	b.emit(evv1.SubjectReportStored, ev, err)
}

// ReportDeleted announces a deleted report.
func (b *Bus) ReportDeleted(s report.Summary) {
	ev, err := deletedEvent(s, time.Now())
	b.emit(evv1.SubjectReportDeleted, ev, err)
}

func (b *Bus) emit(subject string, ev evv1.Event, err error) {
	if err != nil {
		b.o.Metrics.EventsFailed.WithLabelValues(subject, "publish").Inc()
		b.o.Logger.Error("build event", "subject", subject, "error", err)
		return
	}
	if b.nc == nil {
		b.broadcast(ev)
		return
	}
	select {
	case b.outbox <- outgoing{subject, ev}:
	default:
		b.o.Metrics.EventsFailed.WithLabelValues(subject, "publish").Inc()
		b.o.Logger.Warn("event outbox full, dropping event", "subject", subject, "digest", ev.Subject)
	}
}

func (b *Bus) broadcast(ev evv1.Event) {
	msg, err := frame(ev)
	if err != nil {
		b.o.Logger.Warn("drop undecodable event", "type", ev.Type, "error", err)
		return
	}
	b.o.Hub.Broadcast(msg)
}

// publishLoop publishes in order, retrying each event until JetStream
// acknowledges it or the bus stops.
func (b *Bus) publishLoop(ctx context.Context) {
	for {
		var out outgoing
		select {
		case <-ctx.Done():
			return
		case out = <-b.outbox:
		}
		data, err := json.Marshal(out.ev)
		if err != nil {
			b.o.Metrics.EventsFailed.WithLabelValues(out.subject, "publish").Inc()
			continue
		}
		for attempt := 1; ; attempt++ {
			pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_, err = b.js.Publish(pctx, out.subject, data, jetstream.WithMsgID(out.ev.ID))
			cancel()
			if err == nil {
				b.o.Metrics.EventsPublished.WithLabelValues(out.subject).Inc()
				break
			}
			if ctx.Err() != nil {
				b.o.Metrics.EventsFailed.WithLabelValues(out.subject, "publish").Inc()
				return
			}
			if attempt == 1 || attempt%30 == 0 {
				b.o.Logger.Warn("publish event, will retry", "subject", out.subject, "digest", out.ev.Subject, "attempt", attempt, "error", err)
			}
			if errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders) {
				b.ensureStream(ctx)
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(b.o.RetryWait):
			}
		}
	}
}

func (b *Bus) ensureStream(ctx context.Context) {
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := evv1.EnsureStream(sctx, b.js); err != nil {
		b.o.Logger.Debug("ensure stream", "error", err)
	}
}

// fanOut receives every event on crowsnest.> (plain subscription, so every
// replica sees every event) and forwards the valid ones to this replica's
// clients. Subjects without a WebSocket frame are skipped.
func (b *Bus) fanOut(m *nats.Msg) {
	if _, ok := evv1.ProducerOf(m.Subject); !ok {
		return
	}
	ev, err := parse(m.Subject, m.Data)
	switch {
	case err != nil && consumed(m.Subject):
		b.o.Logger.Debug("not forwarding invalid event", "subject", m.Subject, "id", clipID(ev.ID), "reason", evv1.Reason(err))
	case err != nil:
		b.rejected(m.Subject, ev, err)
	default:
		b.broadcast(ev)
	}
}
