package events

import (
	"time"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
)

// parse decodes and validates a message received on subject (eventsv1.Validate):
// nothing a forged or broken event says reaches the store or the browsers.
func parse(subject string, data []byte) (eventsv1.Event, error) {
	return eventsv1.Parse(subject, data, time.Now(), eventsv1.DefaultMaxSkew)
}

// consumed reports whether a durable consumer (scan status, inventory,
// served DB)
// reads subject.
// Such events reach every replica's fan-out too; the consumer, shared by all
// replicas, is the one that counts and logs an invalid one, so each is
// counted once.
func consumed(subject string) bool {
	return subject == eventsv1.SubjectImageNeeded || subject == eventsv1.SubjectJobDone || subject == eventsv1.SubjectInventorySnapshot ||
		subject == eventsv1.SubjectVulnDBUpdated
}

// rejected counts and logs an invalid event: subject, id and the broken rule,
// never the payload.
func (b *Bus) rejected(subject string, ev eventsv1.Event, err error) {
	reason := eventsv1.Reason(err)
	b.o.Metrics.EventsInvalid.WithLabelValues(subject, reason).Inc()
	b.o.Logger.Warn("drop invalid event", "subject", subject, "id", clipID(ev.ID), "reason", reason, "error", err)
}

// clipID bounds the id in a log line: an invalid one is the sender's choice.
func clipID(id string) string {
	if len(id) > eventsv1.MaxIDLength {
		return id[:eventsv1.MaxIDLength] + "…"
	}
	return id
}
