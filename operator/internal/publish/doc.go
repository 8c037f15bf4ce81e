// Package publish sends the operator's CloudEvents to NATS JetStream with the
// event id as Nats-Msg-Id, so a repeated publish (a retry, an operator
// restart) is dropped by the stream's duplicate window. It tolerates NATS
// being down: Connect never blocks on the server, a publish fails fast while
// disconnected, and the stream is (re)ensured once the server is back.
package publish
