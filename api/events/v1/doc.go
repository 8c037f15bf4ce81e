// Package v1 is Crowsnest's public event contract: the JetStream stream and
// subjects, the CloudEvents 1.0 envelope, and the payload of every event.
//
// Every event is published as structured-mode CloudEvents JSON on stream
// CROWSNEST, with its deterministic CloudEvents id as the Nats-Msg-Id header so
// that a retried or repeated publish is dropped by JetStream's duplicate window.
// Other tools may import this package to subscribe; changes here are changes
// to a public contract.
package v1
