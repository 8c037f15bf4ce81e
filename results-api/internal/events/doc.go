// Package events connects the results API to NATS JetStream.
//
// It publishes crowsnest.report.stored and crowsnest.report.deleted as
// CloudEvents (events/v1) with a deterministic Nats-Msg-Id after the database
// commit; consumes crowsnest.image.needed and crowsnest.job.done with a
// durable consumer into the scan-status table; and feeds the replica's
// WebSocket hub from a plain (non-durable) subscription on crowsnest.>, so
// every replica delivers every event to its own clients.
//
// When NATS is not configured, events go straight to the local hub. When it
// is configured but unreachable, the API keeps serving and storing: outgoing
// events wait in a bounded in-memory outbox and are retried in order until
// NATS returns (JetStream's duplicate window drops repeats); if the outbox is
// full, or the process stops first, those events are dropped and counted in
// crowsnest_results_api_events_failed_total. Operator events are not lost:
// they stay in the stream until the durable consumer acknowledges them.
package events
