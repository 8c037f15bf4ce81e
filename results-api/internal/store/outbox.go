package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
)

// An OutboxEvent is one event in the transactional outbox (table
// event_outbox): written in the transaction of the report change that
// emits it, deleted once JetStream has acknowledged it.
type OutboxEvent struct {
	ID        int64  // row id: the order events of one digest are published in
	Subject   string // NATS subject
	Digest    string
	EventID   string // the CloudEvents id, sent as Nats-Msg-Id
	Payload   []byte // the CloudEvents JSON envelope, published as is
	Attempts  int    // failed publishes so far
	CreatedAt time.Time
}

// Announcer builds the events report changes emit (internal/events
// implements it with the events/v1 contract). With Options.Announcer set,
// PutReport and DeleteReport write their event into the outbox in the
// transaction of the change: a committed change always has its event
// waiting, a rolled-back one never has.
type Announcer interface {
	ReportStored(report.Summary) (OutboxEvent, error)
	ReportDeleted(report.Summary) (OutboxEvent, error)
}

// ChangeAnnouncer is an Announcer that also announces the changes of
// digests' findings: with one, PutReport writes a recorded change's event
// into the outbox after the report's own (internal/events implements it).
type ChangeAnnouncer interface {
	Announcer
	// FindingsChanged builds the event of a recorded change (with its id).
	// runsIn reads the namespaces the change's digest runs in now, in the
	// change's transaction: one statement, for an announcer that needs
	// them (to decide triage exceptions per namespace) and only then.
	FindingsChanged(c report.Change, runsIn RunsIn) (OutboxEvent, error)
}

// RunsIn returns the namespaces a digest runs in now, sorted.
type RunsIn func() ([]string, error)

// maxLastError bounds the error text kept with a failed event.
const maxLastError = 1000

// announce writes the event of a change into the outbox, inside tx; build
// is Announcer.ReportStored or Announcer.ReportDeleted.
func (s *Store) announce(tx *gorm.DB, build func(Announcer, report.Summary) (OutboxEvent, error), sum report.Summary) error {
	if s.announcer == nil {
		return nil
	}
	ev, err := build(s.announcer, sum)
	if err != nil {
		return fmt.Errorf("build event: %w", err)
	}
	return insertOutbox(tx, ev)
}

func insertOutbox(tx *gorm.DB, ev OutboxEvent) error {
	return tx.Exec(`INSERT INTO event_outbox (subject, digest, event_id, payload) VALUES (?, ?, ?, ?)`,
		ev.Subject, ev.Digest, ev.EventID, ev.Payload).Error
}

// PublishFunc publishes claimed events, in the order given, and returns
// one error per event it tried (nil: the stream acknowledged it). It may
// stop early, when the stream cannot be reached: the events past the
// returned slice were not tried and keep their schedule.
type PublishFunc func(ctx context.Context, evs []OutboxEvent) []error

// RelayResult says what one RelayOutbox call did.
type RelayResult struct {
	Claimed   int // events handed to publish
	Published int // acknowledged, and deleted
	Failed    int // tried and failed: rescheduled
}

// claimOutbox selects the due events that head their digest's queue: an
// event is never published before an older one of the same digest. FOR
// UPDATE SKIP LOCKED lets relays on several replicas run at once: one
// skips what another holds until that one commits, and by then the rows
// it published are gone. (The NOT EXISTS reads the older rows whether or
// not they are locked, so a digest's next event waits for its head even
// while another relay publishes it.)
const claimOutbox = `SELECT o.id, o.subject, o.digest, o.event_id, o.payload, o.attempts, o.created_at
FROM event_outbox o
WHERE o.next_attempt_at <= now()
  AND NOT EXISTS (SELECT 1 FROM event_outbox e WHERE e.digest = o.digest AND e.id < o.id)
ORDER BY o.id
LIMIT ?
FOR UPDATE OF o SKIP LOCKED`

// RelayOutbox runs one relay step in one transaction: it claims up to
// limit due events (claimOutbox), hands them to publish, deletes the
// published ones, reschedules each failed one retryIn(attempts) later
// with its error, and commits. The rows stay locked while they are
// published, so no other relay publishes them at the same time. If the
// process dies, or the commit fails, after publish, the events stay and
// are published again later: delivery is at least once, and the stream
// drops the repeat by its Nats-Msg-Id within its duplicate window.
func (s *Store) RelayOutbox(ctx context.Context, limit int, publish PublishFunc, retryIn func(attempts int) time.Duration) (RelayResult, error) {
	var res RelayResult
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var evs []OutboxEvent
		if err := tx.Raw(claimOutbox, limit).Scan(&evs).Error; err != nil {
			return fmt.Errorf("claim: %w", err)
		}
		if len(evs) == 0 {
			return nil
		}
		res.Claimed = len(evs)
		errs := publish(ctx, evs)
		var done []int64
		for i, err := range errs[:min(len(errs), len(evs))] {
			ev := evs[i]
			if err == nil {
				done = append(done, ev.ID)
				continue
			}
			res.Failed++
			msg := err.Error()
			if len(msg) > maxLastError {
				msg = msg[:maxLastError]
			}
			delay := retryIn(ev.Attempts + 1)
			if err := tx.Exec(`UPDATE event_outbox SET attempts = attempts + 1, last_error = ?,
 next_attempt_at = now() + make_interval(secs => ?) WHERE id = ?`, msg, delay.Seconds(), ev.ID).Error; err != nil {
				return fmt.Errorf("reschedule: %w", err)
			}
		}
		if len(done) > 0 {
			if err := tx.Exec(`DELETE FROM event_outbox WHERE id IN ?`, done).Error; err != nil {
				return fmt.Errorf("delete published: %w", err)
			}
		}
		res.Published = len(done)
		return nil
	})
	if err != nil {
		return RelayResult{Claimed: res.Claimed}, s.fail("relay outbox", err)
	}
	return res, nil
}

// OutboxStats describes the outbox's backlog.
type OutboxStats struct {
	Depth int64 // events waiting
	// OldestAge is how long the oldest event has waited, by the
	// database's clock (0 when the outbox is empty).
	OldestAge time.Duration
	// NextAttempt is how long until the next event a relay may publish is
	// due: the earliest next attempt of an event heading its digest's
	// queue (0 when one is due now; -1 when the outbox is empty).
	NextAttempt time.Duration
}

// OutboxStats measures the outbox.
func (s *Store) OutboxStats(ctx context.Context) (OutboxStats, error) {
	var row struct {
		Depth       int64
		OldestAge   sql.NullFloat64
		NextAttempt sql.NullFloat64
	}
	err := s.db.WithContext(ctx).Raw(`SELECT count(*) AS depth,
 extract(epoch FROM now() - min(created_at))::float8 AS oldest_age,
 extract(epoch FROM min(next_attempt_at) FILTER (WHERE NOT EXISTS
   (SELECT 1 FROM event_outbox e WHERE e.digest = o.digest AND e.id < o.id)) - now())::float8 AS next_attempt
FROM event_outbox o`).Scan(&row).Error
	if err != nil {
		return OutboxStats{}, s.fail("outbox stats", err)
	}
	st := OutboxStats{Depth: row.Depth, NextAttempt: -1}
	if row.OldestAge.Valid {
		st.OldestAge = seconds(max(row.OldestAge.Float64, 0))
	}
	if row.NextAttempt.Valid {
		st.NextAttempt = seconds(max(row.NextAttempt.Float64, 0))
	}
	return st, nil
}

func seconds(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }
