// Package bus is the operator's side of the NATS event bus: events out and
// events in. Out: the operator's CloudEvents go to JetStream with the event id
// as Nats-Msg-Id, so a repeated publish (a retry, an operator restart) is
// dropped by the stream's duplicate window. In: the durable JetStream
// consumer operator-report-deleted reads crowsnest.report.deleted, so a
// deletion published while the operator was stopped or disconnected is
// delivered when it is back; each one that passes eventsv1.Validate tells the
// operator to rescan and is acknowledged (invalid ones are terminated and
// counted in crowsnest_events_invalid_total). It tolerates NATS being down:
// Connect never blocks on the server, a publish fails fast while
// disconnected, and the stream and the consumer are (re)ensured once the
// server is back.
package bus
