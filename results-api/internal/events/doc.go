// Package events connects the results API to NATS JetStream.
//
// Report events leave through a transactional outbox. The store writes the
// crowsnest.report.stored or crowsnest.report.deleted CloudEvent (events/v1,
// built by Announcer), and crowsnest.findings.changed when the report changed
// its digest's findings, into the event_outbox table in the transaction of
// the report change, so a committed change always has its event and a
// rolled-back one never has. The relay (relay.go; one per replica, any
// number at once) publishes the rows to JetStream with the event's
// deterministic id as Nats-Msg-Id and deletes each once the stream has
// acknowledged it. It publishes a digest's events in the order they were
// written, retries an event that fails with capped exponential backoff
// without holding up other digests, and is woken by each commit and each
// NATS reconnect, polling as a fallback. Delivery is at least once: a
// relay that dies between the acknowledgement and its commit leaves the
// rows, which are published again; JetStream drops the repeat within its
// duplicate window (30 minutes), and a consumer that must not see a repeat
// after that deduplicates by the CloudEvents id.
//
// The bus also consumes crowsnest.image.needed and crowsnest.job.done with
// a durable consumer into the scan-status table: an event that cannot be
// applied now (the database is down or stuck past the handler timeout) is
// NAKed with a growing delay and redelivered without limit, never dropped.
// And it feeds the replica's WebSocket hub from a plain (non-durable)
// subscription on crowsnest.>, so every replica delivers every event — its
// own relay's included — to its own clients.
//
// Nothing received is trusted: every event is validated against the contract
// (events/v1 Validate: type, source and payload of its subject, a sane id and
// time) before it is applied or broadcast. The durable consumer terminates an
// invalid event (it is never redelivered); the fan-out does not forward it.
// Each is counted once in crowsnest_events_invalid_total{subject,reason} and
// logged once at warn, without its payload: by the shared consumer for
// image.needed and job.done, by each replica's fan-out for the other subjects.
//
// When NATS is not configured, nothing is written to the outbox and events
// go straight to the local hub. When it is configured but unreachable, the
// API keeps serving and storing (readiness does not depend on NATS); the
// events wait in the outbox, measured by crowsnest_results_api_outbox_depth
// and crowsnest_results_api_outbox_oldest_age_seconds.
package events
