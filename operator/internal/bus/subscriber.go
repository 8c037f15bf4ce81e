package bus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
)

// eventsInvalid counts received events dropped by validation. It is
// registered with controller-runtime's registry, so the manager's metrics
// endpoint serves it; results-api exports the same name.
var eventsInvalid = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "crowsnest_events_invalid_total", Help: "Received events that failed validation and were dropped, by subject and broken rule.",
}, []string{"subject", "reason"})

func init() { metrics.Registry.MustRegister(eventsInvalid) }

// Bounds of the report.deleted consumer.
const (
	// deletedAckWait is how long a delivered deletion may stay unacknowledged
	// before JetStream delivers it again: the handler only queues a digest
	// and acknowledges, so this is only reached when the operator died or
	// lost its connection in between.
	deletedAckWait = 30 * time.Second
	// deletedMaxAckPending bounds the deletions in flight to the operator.
	deletedMaxAckPending = 256
	// restartMax caps the wait between attempts to (re)create the consumer.
	restartMax = 30 * time.Second
)

// ReportDeletedConsumer is the configuration of the operator's durable
// consumer of crowsnest.report.deleted. DeliverNew applies when it is first
// created; from then on its position is kept on the server, so deletions
// published while the operator is stopped or disconnected are delivered
// when it is back. Every message is acknowledged explicitly; one left
// unacknowledged is redelivered after deletedAckWait, then with backoff,
// without limit (a deletion is never dropped for being slow).
func ReportDeletedConsumer() jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:       eventsv1.ConsumerOperatorReportDeleted,
		Description:   "crowsnest operator: rescan running digests whose report was deleted",
		FilterSubject: eventsv1.SubjectReportDeleted,
		DeliverPolicy: jetstream.DeliverNewPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       deletedAckWait, // BackOff[0], as the server requires
		BackOff:       []time.Duration{deletedAckWait, time.Minute, 5 * time.Minute},
		MaxDeliver:    -1,
		MaxAckPending: deletedMaxAckPending,
	}
}

// OnReportDeleted calls fn with the digest of every valid
// crowsnest.report.deleted event, read through the durable JetStream
// consumer ReportDeletedConsumer, and acknowledges it once fn returned. fn
// must not block for long. It makes one attempt to create the consumer
// before it returns (bounded by the publish timeout) and keeps trying in the
// background while NATS is unreachable, so the operator starts without
// NATS; after a reconnect, or when the server lost the consumer, it is
// created again. The returned function stops consuming and waits until the
// handler is no longer called.
//
// An event that fails eventsv1.Validate (not from results-api, dated in the
// future or long ago, without a valid digest, ...) is terminated (never
// redelivered), counted in crowsnest_events_invalid_total and logged once,
// without its payload.
func (p *JetStream) OnReportDeleted(fn func(digest string)) (func() error, error) {
	ctx, cancel := context.WithCancel(context.Background())
	c := &deletedConsumer{p: p, fn: fn, restart: make(chan struct{}, 1)}
	p.setKick(c.kick)
	cc, err := c.start(ctx)
	if err != nil {
		p.log.Info("consumer of deleted reports not started yet; retrying in the background", "consumer", eventsv1.ConsumerOperatorReportDeleted, "error", err.Error())
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.run(ctx, cc)
	}()
	return func() error {
		p.setKick(nil)
		cancel()
		<-done
		return nil
	}, nil
}

// deletedConsumer runs the report.deleted consumer and starts it again
// whenever it broke.
type deletedConsumer struct {
	p       *JetStream
	fn      func(digest string)
	restart chan struct{} // a signal to recreate the consumer
}

// kick asks for the consumer to be recreated; it never blocks.
func (c *deletedConsumer) kick() {
	select {
	case c.restart <- struct{}{}:
	default:
	}
}

// run keeps the consumer going until ctx ends, starting it again (after a
// growing wait while that fails) whenever it is kicked.
func (c *deletedConsumer) run(ctx context.Context, cc jetstream.ConsumeContext) {
	wait := time.Second
	for {
		if cc != nil {
			select {
			case <-ctx.Done():
				stop(cc)
				return
			case <-c.restart:
				stop(cc)
			}
			wait = time.Second
		} else {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
				wait = min(2*wait, restartMax)
			case <-c.restart:
			}
		}
		var err error
		if cc, err = c.start(ctx); err != nil && ctx.Err() == nil {
			c.p.log.Info("could not start the consumer of deleted reports; retrying", "consumer", eventsv1.ConsumerOperatorReportDeleted,
				"error", err.Error(), "retry_in", wait)
		}
	}
}

// stop ends a consume and waits (briefly) until its handler has returned.
func stop(cc jetstream.ConsumeContext) {
	cc.Stop()
	select {
	case <-cc.Closed():
	case <-time.After(5 * time.Second):
	}
}

// start ensures the stream and the consumer and consumes from it.
func (c *deletedConsumer) start(ctx context.Context) (jetstream.ConsumeContext, error) {
	if !c.p.nc.IsConnected() {
		return nil, fmt.Errorf("NATS is not connected (%s)", c.p.nc.Status())
	}
	ctx, cancel := context.WithTimeout(ctx, c.p.timeout)
	defer cancel()
	if err := c.p.ensure(ctx); err != nil {
		return nil, err
	}
	cons, err := c.p.js.CreateOrUpdateConsumer(ctx, eventsv1.StreamName, ReportDeletedConsumer())
	if err != nil {
		return nil, fmt.Errorf("create consumer %s: %w", eventsv1.ConsumerOperatorReportDeleted, err)
	}
	cc, err := cons.Consume(c.handle, jetstream.PullMaxMessages(64), jetstream.ConsumeErrHandler(c.consumeErr))
	if err != nil {
		return nil, fmt.Errorf("consume %s: %w", eventsv1.ConsumerOperatorReportDeleted, err)
	}
	return cc, nil
}

// consumeErr recreates the consumer when it is gone (deleted, or lost with
// a server that came back without its store: its heartbeats stop) or the
// connection closed; other errors are retried by the consume itself.
func (c *deletedConsumer) consumeErr(_ jetstream.ConsumeContext, err error) {
	if errors.Is(err, jetstream.ErrConsumerDeleted) || errors.Is(err, jetstream.ErrConsumerNotFound) ||
		errors.Is(err, jetstream.ErrNoHeartbeat) || errors.Is(err, jetstream.ErrConnectionClosed) || errors.Is(err, jetstream.ErrBadRequest) {
		c.kick()
	}
}

// handle validates one deletion, hands its digest to fn and acknowledges
// it; an invalid one is terminated.
func (c *deletedConsumer) handle(m jetstream.Msg) {
	ev, err := eventsv1.Parse(eventsv1.SubjectReportDeleted, m.Data(), time.Now(), eventsv1.DefaultMaxSkew)
	var data eventsv1.ReportDeleted
	if err == nil {
		err = ev.Decode(&data) // validated above: cannot fail
	}
	if err != nil {
		c.p.rejected(ev, err)
		if err := m.Term(); err != nil {
			c.p.log.Info("could not terminate an invalid event", "subject", eventsv1.SubjectReportDeleted, "error", err.Error())
		}
		return
	}
	c.fn(data.Digest)
	ctx, cancel := context.WithTimeout(context.Background(), c.p.timeout)
	defer cancel()
	// A lost acknowledgement means one more delivery after deletedAckWait:
	// a second rescan request for the same digest, which is harmless.
	if err := m.DoubleAck(ctx); err != nil {
		c.p.log.Info("could not acknowledge a deleted report; it will be delivered again", "subject", eventsv1.SubjectReportDeleted,
			"digest", data.Digest, "error", err.Error())
	}
}

func (p *JetStream) rejected(ev eventsv1.Event, err error) {
	reason := eventsv1.Reason(err)
	if reason == "" {
		reason = eventsv1.ReasonPayload
	}
	eventsInvalid.WithLabelValues(eventsv1.SubjectReportDeleted, reason).Inc()
	id := ev.ID
	if len(id) > eventsv1.MaxIDLength {
		id = id[:eventsv1.MaxIDLength] + "…"
	}
	p.log.Info("dropping invalid event", "subject", eventsv1.SubjectReportDeleted, "id", id, "reason", reason, "error", err.Error())
}
