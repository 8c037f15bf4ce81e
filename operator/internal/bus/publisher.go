package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
)

// Publisher publishes events. A nil *JetStream is not valid; use Disabled
// when no NATS URL is configured.
type Publisher interface {
	// Publish delivers one event and returns once JetStream acknowledged it.
	Publish(ctx context.Context, ev eventsv1.Event) error
	// Enabled reports whether events go anywhere.
	Enabled() bool
}

// Disabled drops every event; it is used when no NATS URL is configured.
type Disabled struct{}

// Publish does nothing.
func (Disabled) Publish(context.Context, eventsv1.Event) error { return nil }

// Enabled is false.
func (Disabled) Enabled() bool { return false }

// JetStream publishes to the CROWSNEST stream and consumes deleted reports
// from it (OnReportDeleted).
type JetStream struct {
	nc      *nats.Conn
	js      jetstream.JetStream
	timeout time.Duration
	log     logr.Logger

	mu      sync.Mutex
	ensured bool
	kick    func() // recreates the report.deleted consumer after a reconnect
}

// Connect dials url in the background: it returns at once even when the
// server is down and keeps reconnecting forever. timeout bounds each publish.
func Connect(url string, timeout time.Duration, opts ...nats.Option) (*JetStream, error) {
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	base := []nats.Option{
		nats.Name("crowsnest-operator"),
		nats.RetryOnFailedConnect(true),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(time.Second),
		// No buffering while disconnected: a publish fails at once and the
		// controller records it, instead of a message waiting in memory.
		nats.ReconnectBufSize(-1),
	}
	nc, err := nats.Connect(url, append(base, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("connect to NATS at %s: %w", redact(url), err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("jetstream context: %w", err)
	}
	p := &JetStream{nc: nc, js: js, timeout: timeout, log: logf.Log.WithName("bus")}
	nc.SetReconnectHandler(func(*nats.Conn) { p.reconnected() })
	return p, nil
}

// Enabled is true.
func (p *JetStream) Enabled() bool { return true }

// Close drains nothing and closes the connection.
func (p *JetStream) Close() { p.nc.Close() }

func (p *JetStream) setEnsured(v bool) {
	p.mu.Lock()
	p.ensured = v
	p.mu.Unlock()
}

// reconnected runs after every reconnect: the server may be a new one, or
// one that lost its store, so the stream is ensured again before the next
// publish and the consumer of deleted reports is created again.
func (p *JetStream) reconnected() {
	p.mu.Lock()
	p.ensured = false
	kick := p.kick
	p.mu.Unlock()
	if kick != nil {
		kick()
	}
}

func (p *JetStream) setKick(fn func()) {
	p.mu.Lock()
	p.kick = fn
	p.mu.Unlock()
}

// Publish sends ev on the subject of its type with Nats-Msg-Id = ev.ID.
func (p *JetStream) Publish(ctx context.Context, ev eventsv1.Event) error {
	_, err := p.PublishDedup(ctx, ev)
	return err
}

// PublishDedup is Publish, and tells whether JetStream dropped ev as a
// duplicate: a message with the same id was stored within the stream's
// duplicate window.
func (p *JetStream) PublishDedup(ctx context.Context, ev eventsv1.Event) (duplicate bool, err error) {
	subject, ok := eventsv1.SubjectFor(ev.Type)
	if !ok {
		return false, fmt.Errorf("unknown event type %q", ev.Type)
	}
	if !p.nc.IsConnected() {
		return false, fmt.Errorf("publish %s %s: NATS is not connected (%s)", subject, ev.ID, p.nc.Status())
	}
	data, err := json.Marshal(ev)
	if err != nil {
		return false, fmt.Errorf("encode event %s: %w", ev.ID, err)
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	if err := p.ensure(ctx); err != nil {
		return false, err
	}
	ack, err := p.js.Publish(ctx, subject, data, jetstream.WithMsgID(ev.ID))
	if errors.Is(err, jetstream.ErrNoStreamResponse) {
		// The stream vanished (a server without persistence came back):
		// create it again and retry once.
		p.setEnsured(false)
		if err = p.ensure(ctx); err == nil {
			ack, err = p.js.Publish(ctx, subject, data, jetstream.WithMsgID(ev.ID))
		}
	}
	if err != nil {
		return false, fmt.Errorf("publish %s %s: %w", subject, ev.ID, err)
	}
	return ack.Duplicate, nil
}

func (p *JetStream) ensure(ctx context.Context) error {
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

// redact drops any user information from a NATS URL so that it can be
// logged: nats://user:password@host becomes nats://host.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable NATS URL)"
	}
	u.User = nil
	return u.String()
}
