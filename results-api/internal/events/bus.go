package events

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/hub"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/metrics"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
)

// Durable is the name of the scan-status consumer shared by all replicas.
const Durable = eventsv1.ConsumerResultsAPIScans

// InventoryDurable is the name of the inventory consumer shared by all
// replicas (crowsnest.inventory.snapshot).
const InventoryDurable = eventsv1.ConsumerResultsAPIInventory

// Options configure the bus.
type Options struct {
	URL string // empty: no NATS, events go to the local hub only
	// Store must have been opened with an Announcer (Announcer{}) when URL
	// is set: the relay publishes what report changes wrote into its outbox.
	Store   *store.Store
	Hub     *hub.Hub
	Metrics *metrics.Metrics
	Logger  *slog.Logger
	// OnInventory, when set, is called after a namespace's inventory
	// snapshot was applied (not for an ignored older or repeated one).
	OnInventory func(namespace string)
	// Connect are extra connect options: the NATS credentials
	// (eventsv1.Credentials.Options).
	Connect []nats.Option
	Timing
}

// Timing holds the bus's intervals and limits; zero fields take the
// defaults in brackets.
type Timing struct {
	// RetryWait is the wait between reconnects and between attempts to set
	// up the stream and the consumer [1s].
	RetryWait time.Duration

	// The relay.
	RelayBatch     int           // events per relay transaction [100]
	RelayPoll      time.Duration // poll of the outbox when nothing wakes the relay [2s]
	PublishTimeout time.Duration // wait for one JetStream acknowledgement [5s]
	RetryMin       time.Duration // first retry of an event that failed to publish [1s]
	RetryMax       time.Duration // cap of its exponential backoff [5m]

	// The scan-status consumer.
	AckWait        time.Duration // JetStream redelivers an unacknowledged event after this [60s]
	HandlerTimeout time.Duration // bound of the database work for one event; below AckWait [20s]
	// Redelivery is the NAK delay after the n-th failed delivery of an
	// event (the last one repeats; deliveries are unlimited)
	// [1s 5s 15s 30s 60s].
	Redelivery []time.Duration
}

func (t *Timing) defaults() {
	set := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	set(&t.RetryWait, time.Second)
	set(&t.RelayPoll, 2*time.Second)
	set(&t.PublishTimeout, 5*time.Second)
	set(&t.RetryMin, time.Second)
	set(&t.RetryMax, 5*time.Minute)
	set(&t.AckWait, 60*time.Second)
	set(&t.HandlerTimeout, 20*time.Second)
	if t.RelayBatch <= 0 {
		t.RelayBatch = 100
	}
	if len(t.Redelivery) == 0 {
		t.Redelivery = []time.Duration{time.Second, 5 * time.Second, 15 * time.Second, 30 * time.Second, time.Minute}
	}
}

// Bus publishes report events from the outbox and consumes operator events.
type Bus struct {
	o      Options
	nc     *nats.Conn
	js     jetstream.JetStream
	wake   chan struct{} // nudges the relay; capacity 1
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// Start connects (without waiting for NATS to be reachable) and starts the
// outbox relay, the durable consumer and the fan-out subscription.
func Start(ctx context.Context, o Options) (*Bus, error) {
	if o.Metrics == nil {
		o.Metrics = metrics.New()
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	o.defaults()
	if o.HandlerTimeout >= o.AckWait {
		return nil, fmt.Errorf("events: handler timeout %s must be below the ack wait %s", o.HandlerTimeout, o.AckWait)
	}
	b := &Bus{o: o, wake: make(chan struct{}, 1)}
	if o.URL == "" {
		return b, nil
	}
	log := o.Logger
	nc, err := nats.Connect(o.URL, append([]nats.Option{nats.Name("crowsnest-results-api"), nats.RetryOnFailedConnect(true),
		nats.MaxReconnects(-1), nats.ReconnectWait(o.RetryWait), nats.Timeout(5 * time.Second),
		nats.ConnectHandler(func(*nats.Conn) {
			log.Info("nats connected")
			b.nudge()
		}),
		nats.DisconnectErrHandler(func(c *nats.Conn, err error) {
			if !c.IsClosed() && !c.IsDraining() { // not our own Close
				log.Warn("nats disconnected; events wait in the outbox", "error", err)
			}
		}),
		nats.ReconnectHandler(func(*nats.Conn) {
			log.Info("nats reconnected")
			b.nudge()
		})}, o.Connect...)...)
	if err != nil {
		return nil, fmt.Errorf("connect nats: %w", err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	b.nc, b.js = nc, js
	if !nc.IsConnected() {
		log.Warn("nats not reachable yet; serving without it, events wait in the outbox", "status", nc.Status().String())
	}
	o.Metrics.WatchNATS(nc.IsConnected)
	if _, err := nc.Subscribe(eventsv1.StreamSubjects, b.fanOut); err != nil {
		nc.Close()
		return nil, fmt.Errorf("subscribe %s: %w", eventsv1.StreamSubjects, err)
	}
	ctx, b.cancel = context.WithCancel(context.WithoutCancel(ctx))
	b.wg.Add(4)
	go func() { defer b.wg.Done(); b.relayLoop(ctx) }()
	go func() { defer b.wg.Done(); b.consumeLoop(ctx, b.consumerConfig(), b.handle) }()
	go func() { defer b.wg.Done(); b.consumeLoop(ctx, b.inventoryConsumerConfig(), b.handleInventory) }()
	go func() { defer b.wg.Done(); b.consumeLoop(ctx, b.vulnDBConsumerConfig(), b.handleVulnDB) }()
	return b, nil
}

// Close stops the relay and the consumer and drains the connection.
// Events not yet published stay in the outbox for the next relay.
func (b *Bus) Close() {
	if b.nc == nil {
		return
	}
	b.cancel()
	b.wg.Wait()
	_ = b.nc.Drain()
}

// NATSStatus reports whether NATS is connected (nil; always nil without
// NATS). The API does not depend on it to serve: /readyz lists it as
// informational.
func (b *Bus) NATSStatus(context.Context) error {
	if b.nc == nil || b.nc.IsConnected() {
		return nil
	}
	return errors.New("nats " + b.nc.Status().String() + "; events wait in the outbox")
}

// ReportStored is called after a report change has committed: with NATS
// the relay is woken to publish the change's event from the outbox;
// without it the event goes straight to this replica's WebSocket clients.
func (b *Bus) ReportStored(s report.Summary) {
	if b.nc != nil {
		b.nudge()
		return
	}
	ev, err := storedEvent(s, time.Now())
	b.local(eventsv1.SubjectReportStored, ev, err)
}

// ReportDeleted is ReportStored for a deleted report.
func (b *Bus) ReportDeleted(s report.Summary) {
	if b.nc != nil {
		b.nudge()
		return
	}
	ev, err := deletedEvent(s, time.Now())
	b.local(eventsv1.SubjectReportDeleted, ev, err)
}

// FindingsChanged is ReportStored for a recorded change of a digest's
// findings (store.PutResult.Change).
func (b *Bus) FindingsChanged(c report.Change) {
	if b.nc != nil {
		b.nudge()
		return
	}
	ev, err := changedEvent(c, time.Now())
	b.local(eventsv1.SubjectFindingsChanged, ev, err)
}

func (b *Bus) local(subject string, ev eventsv1.Event, err error) {
	if err != nil {
		b.o.Logger.Error("build event", "subject", subject, "error", err)
		return
	}
	b.broadcast(ev)
}

func (b *Bus) nudge() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

func (b *Bus) broadcast(ev eventsv1.Event) {
	msg, digest, err := frame(ev)
	if err != nil {
		b.o.Logger.Warn("drop undecodable event", "type", ev.Type, "error", err)
		return
	}
	if msg == nil {
		return
	}
	if !b.o.Hub.Scoped() {
		b.o.Hub.Broadcast(msg)
		return
	}
	// One query per event, not per client: the namespaces the digest runs
	// in decide which namespace-scoped clients receive it. Without an
	// answer only the clients of the whole cluster do.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	namespaces, err := b.o.Store.NamespacesOf(ctx, digest)
	cancel()
	if err != nil {
		b.o.Logger.Warn("namespaces of event digest; sending it to cluster-wide clients only", "digest", digest, "error", err)
	}
	if ev.Type == eventsv1.TypeImageNeeded || ev.Type == eventsv1.TypeJobDone {
		redacted, origin, err := redactedScanFrame(ev)
		if err != nil {
			b.o.Logger.Warn("drop undecodable event", "type", ev.Type, "error", err)
			return
		}
		b.o.Hub.PublishRedacted(msg, redacted, namespaces, origin)
		return
	}
	if ev.Type == eventsv1.TypeFindingsChanged {
		limited, marked, err := unmarkedChangedFrame(ev)
		if err != nil {
			b.o.Logger.Warn("drop undecodable event", "type", ev.Type, "error", err)
			return
		}
		if marked {
			b.o.Hub.PublishScoped(msg, limited, namespaces)
			return
		}
	}
	b.o.Hub.Publish(msg, namespaces)
}

// fanOut receives every event on crowsnest.> (plain subscription, so every
// replica sees every event, its own relay's included) and forwards the
// valid ones to this replica's clients. Subjects without a WebSocket frame
// are skipped.
func (b *Bus) fanOut(m *nats.Msg) {
	if _, ok := eventsv1.ProducerOf(m.Subject); !ok {
		return
	}
	ev, err := parse(m.Subject, m.Data)
	switch {
	case err != nil && consumed(m.Subject):
		b.o.Logger.Debug("not forwarding invalid event", "subject", m.Subject, "id", clipID(ev.ID), "reason", eventsv1.Reason(err))
	case err != nil:
		b.rejected(m.Subject, ev, err)
	default:
		b.broadcast(ev)
	}
}
