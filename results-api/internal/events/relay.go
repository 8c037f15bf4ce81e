package events

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
)

const (
	// minRelayWait spaces the steps of a relay that finds due events it
	// cannot claim (another replica's relay holds them).
	minRelayWait = 100 * time.Millisecond
	// maxOutageWait caps the relay's backoff while the stream cannot be
	// reached; a reconnect or a commit wakes it sooner.
	maxOutageWait = 30 * time.Second
	// relayStepTimeout bounds one relay transaction: a batch stops at the
	// first publish that times out, so this is never the limit in practice.
	relayStepTimeout = time.Minute
)

// relayLoop publishes the outbox until the bus stops. It steps when a
// commit or a reconnect nudges it, when the next event that failed is due,
// and every RelayPoll otherwise (another replica's commits, a lost nudge).
// Any number of replicas may run it on one database (store.RelayOutbox).
func (b *Bus) relayLoop(ctx context.Context) {
	var outages int   // consecutive steps that found the stream unreachable
	var failing error // the relay's database error, logged when it starts and ends
	for {
		wait := b.o.RelayPoll
		unreachable := false
		if b.nc.IsConnected() {
			res, u, err := b.relayStep(ctx)
			if ctx.Err() != nil {
				return
			}
			unreachable = u
			failing = b.logFailing(failing, err)
			switch {
			case unreachable:
				outages++
				wait = min(b.o.RetryMin<<min(outages-1, 16), maxOutageWait)
			case err == nil && res.Claimed > 0:
				// Publishing an event makes the next one of its digest due.
				outages = 0
				b.measure(ctx)
				continue
			}
		}
		if next := b.measure(ctx); !unreachable && next >= 0 && b.nc.IsConnected() {
			wait = min(max(next, minRelayWait), wait)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-b.wake:
		case <-t.C:
		}
		t.Stop()
	}
}

func (b *Bus) logFailing(was, err error) error {
	switch {
	case err != nil && was == nil:
		b.o.Logger.Warn("relay outbox, will retry", "error", err)
	case err == nil && was != nil:
		b.o.Logger.Info("relay outbox recovered")
	}
	return err
}

// relayStep publishes one batch of due events (store.RelayOutbox with
// publish). unreachable reports that the batch stopped because the stream
// could not be reached.
func (b *Bus) relayStep(ctx context.Context) (res store.RelayResult, unreachable bool, err error) {
	// The database work outlives a stop of the bus mid-step, so that what
	// was published is deleted; publishing itself stops with ctx.
	dbctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), relayStepTimeout)
	defer cancel()
	res, err = b.o.Store.RelayOutbox(dbctx, b.o.RelayBatch, func(_ context.Context, evs []store.OutboxEvent) []error {
		errs, u := b.publish(ctx, evs)
		unreachable = u
		return errs
	}, b.retryIn)
	return res, unreachable, err
}

// publish publishes evs in order, each with its CloudEvents id as
// Nats-Msg-Id, and returns one error per event it tried. It stops at the
// first error saying the stream cannot be reached now (no answer, no
// stream, connection lost; unreachable is then true) — the other events
// would only wait out the same timeout — and when the bus stops: the
// events after that keep their turn. Any other error (the server rejects
// this one event) is the event's own: it is retried later, and the next
// events are published.
func (b *Bus) publish(ctx context.Context, evs []store.OutboxEvent) (errs []error, unreachable bool) {
	m := b.o.Metrics
	for _, ev := range evs {
		if ctx.Err() != nil || !b.nc.IsConnected() {
			return errs, !b.nc.IsConnected()
		}
		pctx, cancel := context.WithTimeout(ctx, b.o.PublishTimeout)
		_, err := b.js.Publish(pctx, ev.Subject, ev.Payload, jetstream.WithMsgID(ev.EventID))
		cancel()
		if err != nil && ctx.Err() != nil {
			return errs, false // stopped mid-publish: not an attempt; the event is published again
		}
		errs = append(errs, err)
		if err == nil {
			m.EventsPublished.WithLabelValues(ev.Subject).Inc()
			if ev.Attempts > 0 {
				b.o.Logger.Info("published event after failed attempts", "subject", ev.Subject, "digest", ev.Digest, "attempts", ev.Attempts)
			}
			continue
		}
		m.OutboxPublishFailures.WithLabelValues(ev.Subject).Inc()
		m.EventsFailed.WithLabelValues(ev.Subject, "publish").Inc()
		if n := ev.Attempts + 1; n == 1 || n%10 == 0 {
			b.o.Logger.Warn("publish event, will retry", "subject", ev.Subject, "digest", ev.Digest, "id", ev.EventID,
				"attempt", n, "retry_in", b.retryIn(n), "error", err)
		}
		if isUnreachable(err) {
			if errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders) {
				b.ensureStream(ctx)
			}
			return errs, true
		}
	}
	return errs, false
}

// isUnreachable tells an error of the path to the stream (it holds for
// every event) from the server refusing one event.
func isUnreachable(err error) bool {
	var apiErr *jetstream.APIError
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse) ||
		errors.Is(err, nats.ErrConnectionClosed) || errors.Is(err, nats.ErrConnectionDraining) ||
		errors.Is(err, nats.ErrConnectionReconnecting) || errors.Is(err, nats.ErrDisconnected) ||
		errors.Is(err, jetstream.ErrJetStreamNotEnabled) ||
		(errors.As(err, &apiErr) && apiErr.Code == http.StatusServiceUnavailable)
}

// retryIn is the capped exponential backoff of an event after its n-th
// failed publish: RetryMin, twice that, … up to RetryMax.
func (b *Bus) retryIn(n int) time.Duration {
	d := b.o.RetryMin
	for i := 1; i < n && d < b.o.RetryMax; i++ {
		d *= 2
	}
	return min(d, b.o.RetryMax)
}

// measure refreshes the outbox metrics and returns how long until the next
// event is due (-1: none is waiting, or the database did not answer).
func (b *Bus) measure(ctx context.Context) time.Duration {
	mctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	st, err := b.o.Store.OutboxStats(mctx)
	if err != nil {
		return -1
	}
	b.o.Metrics.SetOutbox(st.Depth, st.OldestAge)
	return st.NextAttempt
}

func (b *Bus) ensureStream(ctx context.Context) {
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := eventsv1.EnsureStream(sctx, b.js); err != nil {
		b.o.Logger.Debug("ensure stream", "error", err)
	}
}
