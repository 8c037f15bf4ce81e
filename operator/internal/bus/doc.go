// Package bus is the operator's side of the NATS event bus: events out and
// events in. Out: the operator's CloudEvents go to JetStream with the event id
// as Nats-Msg-Id, so a repeated publish (a retry, an operator restart) is
// dropped by the stream's duplicate window. In: a core NATS subscription to
// crowsnest.report.deleted tells the operator to rescan, once the event
// passed eventsv1.Validate (invalid ones are dropped and counted in
// crowsnest_events_invalid_total). It tolerates NATS
// being down: Connect never blocks on the server, a publish fails fast while
// disconnected, and the stream is (re)ensured once the server is back.
package bus
