// Package events publishes the matcher's events (crowsnest.vulndb.updated,
// crowsnest.rematch.done) to NATS JetStream without ever blocking the work
// that produces them.
//
// An event is first written to a small pending file (Outbox) with a
// deterministic id, then published in the background with that id as
// Nats-Msg-Id and removed from the file once JetStream acknowledged it.
// NATS being down only delays events: they stay in the file, across
// restarts, and are retried with a capped backoff. A process killed between
// JetStream's acknowledgement and the file update publishes the event again
// on restart, which JetStream's duplicate window drops; the file also
// remembers the ids it recently took, so the same fact recorded twice (a
// restart re-announcing the active DB) is queued once.
package events
