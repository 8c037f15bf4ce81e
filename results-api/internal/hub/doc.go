// Package hub fans live events out to WebSocket clients (coder/websocket).
//
// Broadcast never blocks: each client has a bounded queue, and a client whose
// queue is full is closed with StatusPolicyViolation so one stalled browser
// cannot delay the rest. Every write has a timeout, a ping keeps idle
// connections alive through proxies and detects dead peers, and the origin
// check of coder/websocket (same host unless patterns allow more) applies.
// The clients are capped in total and per source address; a client over a
// cap is refused before the upgrade.
package hub
