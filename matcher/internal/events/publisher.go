package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
)

// Metrics receives what the publisher does.
type Metrics interface {
	PublishFailed(subject string)
	Pending(n int)
	Dropped(n int)
}

// Options configure a Publisher.
type Options struct {
	URL     string        // NATS URL, e.g. nats://nats:4222
	Connect []nats.Option // credentials (eventsv1.Credentials.Options)
	// Timeout bounds one publish (default 5s).
	Timeout time.Duration
	// RetryMin and RetryMax bound the wait between attempts while NATS
	// fails (defaults 1s and 30s); a reconnect or a new event retries at once.
	RetryMin, RetryMax time.Duration
	Metrics            Metrics
	Logger             *slog.Logger
}

// Publisher sends the outbox's events to JetStream in the background.
type Publisher struct {
	o      Options
	outbox *Outbox
	nc     *nats.Conn
	js     jetstream.JetStream

	mu      sync.Mutex
	ensured bool
}

// Connect dials NATS in the background: it returns at once even when the
// server is down, and reconnects forever.
func Connect(outbox *Outbox, o Options) (*Publisher, error) {
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	if o.RetryMin <= 0 {
		o.RetryMin = time.Second
	}
	if o.RetryMax < o.RetryMin {
		o.RetryMax = max(30*time.Second, o.RetryMin)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	p := &Publisher{o: o, outbox: outbox}
	base := []nats.Option{
		nats.Name("crowsnest-matcher"),
		nats.RetryOnFailedConnect(true),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(time.Second),
		nats.Timeout(5 * time.Second),
		// No buffering while disconnected: the event stays in the pending
		// file, not in memory.
		nats.ReconnectBufSize(-1),
		nats.ReconnectHandler(func(*nats.Conn) { p.reconnected() }),
		nats.ConnectHandler(func(*nats.Conn) { p.reconnected() }),
	}
	nc, err := nats.Connect(o.URL, append(base, o.Connect...)...)
	if err != nil {
		return nil, fmt.Errorf("connect to NATS at %s: %w", Redact(o.URL), err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	p.nc, p.js = nc, js
	if !nc.IsConnected() {
		o.Logger.Warn("nats not reachable yet; events wait in the pending file", "nats", Redact(o.URL))
	}
	return p, nil
}

// reconnected runs on every (re)connect: the server may have lost its
// store, so the stream is ensured again, and pending events go now.
func (p *Publisher) reconnected() {
	p.mu.Lock()
	p.ensured = false
	p.mu.Unlock()
	p.outbox.nudge()
}

// Run publishes pending events until ctx ends. Events left unpublished
// stay in the pending file.
func (p *Publisher) Run(ctx context.Context) {
	wait := p.o.RetryMin
	failing := false
	for {
		err := p.flush(ctx)
		p.metric(func(m Metrics) { m.Pending(p.outbox.Len()) })
		if ctx.Err() != nil {
			return
		}
		var timer *time.Timer
		var next <-chan time.Time
		switch {
		case err != nil:
			if !failing {
				p.o.Logger.Warn("publish event; will retry", "error", err, "pending", p.outbox.Len())
			} else {
				p.o.Logger.Debug("publish event; will retry", "error", err, "retry_in", wait)
			}
			failing = true
			timer = time.NewTimer(wait)
			next = timer.C
			wait = min(2*wait, p.o.RetryMax)
		case failing:
			p.o.Logger.Info("events published again")
			failing, wait = false, p.o.RetryMin
		}
		select {
		case <-ctx.Done():
			return
		case <-p.outbox.Wake():
		case <-next:
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// flush publishes every pending event, oldest first, stopping at the
// first failure so that events keep their order.
func (p *Publisher) flush(ctx context.Context) error {
	for _, ev := range p.outbox.Pending() {
		subject, _ := eventsv1.SubjectFor(ev.Type)
		if err := p.publish(ctx, subject, ev); err != nil {
			p.metric(func(m Metrics) { m.PublishFailed(subject) })
			return err
		}
		if err := p.outbox.Done(ev.ID); err != nil {
			return err
		}
		p.o.Logger.Info("event published", "subject", subject, "id", ev.ID)
	}
	return nil
}

func (p *Publisher) publish(ctx context.Context, subject string, ev eventsv1.Event) error {
	if subject == "" {
		return fmt.Errorf("event %s: unknown type %q", ev.ID, ev.Type)
	}
	if !p.nc.IsConnected() {
		return fmt.Errorf("publish %s %s: NATS is not connected (%s)", subject, ev.ID, p.nc.Status())
	}
	data, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("encode event %s: %w", ev.ID, err)
	}
	ctx, cancel := context.WithTimeout(ctx, p.o.Timeout)
	defer cancel()
	if err := p.ensure(ctx); err != nil {
		return err
	}
	_, err = p.js.Publish(ctx, subject, data, jetstream.WithMsgID(ev.ID))
	if errors.Is(err, jetstream.ErrNoStreamResponse) {
		// The stream vanished (a server without persistence came back).
		p.mu.Lock()
		p.ensured = false
		p.mu.Unlock()
		if err = p.ensure(ctx); err == nil {
			_, err = p.js.Publish(ctx, subject, data, jetstream.WithMsgID(ev.ID))
		}
	}
	if err != nil {
		return fmt.Errorf("publish %s %s: %w", subject, ev.ID, err)
	}
	return nil
}

func (p *Publisher) ensure(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ensured {
		return nil
	}
	if _, err := eventsv1.OpenStream(ctx, p.js); err != nil { // results-api owns its configuration
		return err
	}
	p.ensured = true
	return nil
}

func (p *Publisher) metric(f func(Metrics)) {
	if p.o.Metrics != nil {
		f(p.o.Metrics)
	}
}

// Close closes the connection; call it after Run returned.
func (p *Publisher) Close() { p.nc.Close() }

// Redact drops user information from a NATS URL so that it can be logged.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(invalid URL)"
	}
	u.User = nil
	return u.String()
}
