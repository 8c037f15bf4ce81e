package events

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
)

// consumeLoop sets up the stream and the durable consumer, retrying until
// NATS answers, then keeps consuming until the bus stops. The consumer is
// shared by all replicas, so each operator event updates the table once.
func (b *Bus) consumeLoop(ctx context.Context, cfg jetstream.ConsumerConfig, handle func(context.Context, jetstream.Msg)) {
	for attempt := 1; ; attempt++ {
		cc, err := b.startConsumer(ctx, cfg, handle)
		if err == nil {
			<-ctx.Done()
			cc.Stop()
			return
		}
		// NATS not reachable yet is expected at start-up; a server that
		// answers and refuses the consumer is a configuration problem.
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) || attempt%60 == 0 {
			b.o.Logger.Warn("start consumer, will retry", "consumer", cfg.Durable, "attempt", attempt, "error", err)
		} else {
			b.o.Logger.Debug("start consumer, will retry", "consumer", cfg.Durable, "attempt", attempt, "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(b.o.RetryWait):
		}
	}
}

// consumerConfig is the scan-status consumer. Deliveries are unlimited
// (MaxDeliver -1): an event that cannot be applied now (the database is
// down) is NAKed with a growing delay (Timing.Redelivery) and never
// dropped; only invalid events are terminated. The delay is the NAK's, not
// the consumer's BackOff list: the server would make BackOff[0] the ack
// wait (nats-server consumer.go), redelivering an event whose handler
// runs longer than the first delay to another replica. CreateOrUpdate
// upgrades the consumer an earlier version created (MaxDeliver 20, ack
// wait 30s) in place.
func (b *Bus) consumerConfig() jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:        Durable,
		Description:    "results-api scan status from operator events",
		FilterSubjects: []string{eventsv1.SubjectImageNeeded, eventsv1.SubjectJobDone},
		AckPolicy:      jetstream.AckExplicitPolicy,
		AckWait:        b.o.AckWait,
		MaxDeliver:     -1,
		DeliverPolicy:  jetstream.DeliverAllPolicy,
	}
}

func (b *Bus) startConsumer(ctx context.Context, cfg jetstream.ConsumerConfig, handle func(context.Context, jetstream.Msg)) (jetstream.ConsumeContext, error) {
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	s, err := eventsv1.EnsureStream(sctx, b.js)
	if err != nil {
		return nil, err
	}
	c, err := s.CreateOrUpdateConsumer(sctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("create or update consumer %s: %w", cfg.Durable, err)
	}
	return c.Consume(func(m jetstream.Msg) { handle(ctx, m) })
}

// handle applies a scan status (job done, scan failed) to its digest.
func (b *Bus) handle(ctx context.Context, m jetstream.Msg) {
	applyEvent(ctx, b, m, scanStatus, "apply scan status",
		func(st report.ScanStatus) []any { return []any{"digest", st.Digest} }, b.o.Store.ApplyScan)
}

// applyEvent is every consumer's path for one message: an event that fails
// validation is terminated (the same bytes will never be valid, so not
// NAKed) and counted as rejected; a valid one whose payload does not
// convert is poison; otherwise write runs under apply. It returns the
// converted value and whether the write succeeded and changed the store.
func applyEvent[T any](ctx context.Context, b *Bus, m jetstream.Msg, convert func(eventsv1.Event) (T, error),
	what string, attrs func(T) []any, write func(context.Context, T) (bool, error)) (T, eventsv1.Event, bool) {
	var zero T
	subject := m.Subject()
	ev, err := parse(subject, m.Data())
	if err != nil {
		_ = m.Term()
		b.rejected(subject, ev, err)
		return zero, ev, false
	}
	v, err := convert(ev)
	if err != nil {
		b.poison(m, subject, err)
		return zero, ev, false
	}
	var changed bool
	ok := b.apply(ctx, m, what, attrs(v), func(ctx context.Context) error {
		var err error
		changed, err = write(ctx, v)
		return err
	})
	return v, ev, ok && changed
}

// apply runs a parsed message's store write and settles the message: acked
// when the write succeeded; NAKed at once when the bus is stopping (another
// replica takes it now); NAKed with the redelivery delay when the database
// is down or stuck, so nothing is lost. The write gets HandlerTimeout, well
// below the ack wait: a stuck database fails the delivery here, and the NAK
// schedules the next one before JetStream would redeliver on its own.
func (b *Bus) apply(ctx context.Context, m jetstream.Msg, what string, attrs []any, write func(context.Context) error) bool {
	subject := m.Subject()
	hctx, cancel := context.WithTimeout(ctx, b.o.HandlerTimeout)
	err := write(hctx)
	cancel()
	if err != nil && ctx.Err() != nil {
		_ = m.Nak()
		return false
	}
	if err != nil {
		delay := b.redelivery(m)
		b.o.Metrics.EventsFailed.WithLabelValues(subject, "consume").Inc()
		b.o.Logger.Warn(what+", will redeliver", append(append([]any{"subject", subject}, attrs...),
			"retry_in", delay, "error", err)...)
		_ = m.NakWithDelay(delay)
		return false
	}
	b.o.Metrics.EventsConsumed.WithLabelValues(subject).Inc()
	_ = m.Ack()
	return true
}

// redelivery is the NAK delay after the delivery m failed: Redelivery by
// the number of deliveries so far, its last entry from then on.
func (b *Bus) redelivery(m jetstream.Msg) time.Duration {
	r := b.o.Redelivery
	n := 1
	if md, err := m.Metadata(); err == nil && md.NumDelivered > 0 {
		n = int(min(md.NumDelivered, uint64(len(r))))
	}
	return r[n-1]
}

// poison terminates a message that can never be processed.
func (b *Bus) poison(m jetstream.Msg, subject string, err error) {
	b.o.Metrics.EventsFailed.WithLabelValues(subject, "consume").Inc()
	b.o.Logger.Warn("drop malformed operator event", "subject", subject, "error", err)
	_ = m.Term()
}
