package events

import (
	"time"

	evv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
)

// parse decodes and validates a message received on subject (evv1.Validate):
// nothing a forged or broken event says reaches the store or the browsers.
func parse(subject string, data []byte) (evv1.Event, error) {
	return evv1.Parse(subject, data, time.Now(), evv1.DefaultMaxSkew)
}

// consumed reports whether a durable consumer (scan status, inventory)
// reads subject.
// Such events reach every replica's fan-out too; the consumer, shared by all
// replicas, is the one that counts and logs an invalid one, so each is
// counted once.
func consumed(subject string) bool {
	return subject == evv1.SubjectImageNeeded || subject == evv1.SubjectJobDone || subject == evv1.SubjectInventorySnapshot
}

// rejected counts and logs an invalid event: subject, id and the broken rule,
// never the payload.
func (b *Bus) rejected(subject string, ev evv1.Event, err error) {
	reason := evv1.Reason(err)
	b.o.Metrics.EventsInvalid.WithLabelValues(subject, reason).Inc()
	b.o.Logger.Warn("drop invalid event", "subject", subject, "id", clipID(ev.ID), "reason", reason, "error", err)
}

// clipID bounds the id in a log line: an invalid one is the sender's choice.
func clipID(id string) string {
	if len(id) > evv1.MaxIDLength {
		return id[:evv1.MaxIDLength] + "…"
	}
	return id
}
