package events

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	evv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
)

// consumeLoop sets up the stream and the durable consumer, retrying until
// NATS answers, then keeps consuming until the bus stops. The consumer is
// shared by all replicas, so each operator event updates the table once.
func (b *Bus) consumeLoop(ctx context.Context) {
	for {
		cc, err := b.startConsumer(ctx)
		if err == nil {
			<-ctx.Done()
			cc.Stop()
			return
		}
		b.o.Logger.Debug("start scan-status consumer, will retry", "error", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(b.o.RetryWait):
		}
	}
}

func (b *Bus) startConsumer(ctx context.Context) (jetstream.ConsumeContext, error) {
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	s, err := evv1.EnsureStream(sctx, b.js)
	if err != nil {
		return nil, err
	}
	c, err := s.CreateOrUpdateConsumer(sctx, jetstream.ConsumerConfig{
		Durable:        Durable,
		Description:    "results-api scan status from operator events",
		FilterSubjects: []string{evv1.SubjectImageNeeded, evv1.SubjectJobDone},
		AckPolicy:      jetstream.AckExplicitPolicy,
		AckWait:        30 * time.Second,
		MaxDeliver:     20,
		DeliverPolicy:  jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return nil, err
	}
	return c.Consume(func(m jetstream.Msg) { b.handle(ctx, m) })
}

func (b *Bus) handle(ctx context.Context, m jetstream.Msg) {
	subject := m.Subject()
	ev, err := parse(subject, m.Data())
	if err != nil {
		// Terminated, not NAKed: the same bytes will never be valid.
		_ = m.Term()
		b.rejected(subject, ev, err)
		return
	}
	st, err := scanStatus(ev)
	if err != nil {
		b.poison(m, subject, err)
		return
	}
	if _, err := b.o.Store.ApplyScan(ctx, st); err != nil {
		// The database is down: redeliver later, nothing is lost.
		b.o.Metrics.EventsFailed.WithLabelValues(subject, "consume").Inc()
		b.o.Logger.Warn("apply scan status, will redeliver", "subject", subject, "digest", st.Digest, "error", err)
		_ = m.NakWithDelay(5 * time.Second)
		return
	}
	b.o.Metrics.EventsConsumed.WithLabelValues(subject).Inc()
	_ = m.Ack()
}

// poison terminates a message that can never be processed.
func (b *Bus) poison(m jetstream.Msg, subject string, err error) {
	b.o.Metrics.EventsFailed.WithLabelValues(subject, "consume").Inc()
	b.o.Logger.Warn("drop malformed operator event", "subject", subject, "error", err)
	_ = m.Term()
}
