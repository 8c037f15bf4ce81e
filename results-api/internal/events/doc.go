// Package events connects the results API to NATS JetStream.
//
// It publishes crowsnest.report.stored and crowsnest.report.deleted as
// CloudEvents (events/v1) with a deterministic Nats-Msg-Id after the database
// commit; consumes crowsnest.image.needed and crowsnest.job.done with a
// durable consumer into the scan-status table; and feeds the replica's
// WebSocket hub from a plain (non-durable) subscription on crowsnest.>, so
// every replica delivers every event to its own clients.
//
// Nothing received is trusted: every event is validated against the contract
// (events/v1 Validate: type, source and payload of its subject, a sane id and
// time) before it is applied or broadcast. The durable consumer terminates an
// invalid event (it is never redelivered); the fan-out does not forward it.
// Each is counted once in crowsnest_events_invalid_total{subject,reason} and
// logged once at warn, without its payload: by the shared consumer for
// image.needed and job.done, by each replica's fan-out for the other subjects.
//
// When NATS is not configured, events go straight to the local hub. When it
// is configured but unreachable, the API keeps serving and storing: outgoing
// events wait in a bounded in-memory outbox and are retried in order until
// NATS returns (JetStream's duplicate window drops repeats); if the outbox is
// full, or the process stops first, those events are dropped and counted in
// crowsnest_results_api_events_failed_total. Operator events are not lost:
// they stay in the stream until the durable consumer acknowledges them.
package events
