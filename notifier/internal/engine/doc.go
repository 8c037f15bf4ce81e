// Package engine turns Crowsnest events into notifications: it keeps what
// the events say about where each digest runs and which critical findings
// it has, decides which route gets what, collects each route's items in a
// debounce window and seals the window into a group for the receivers.
//
// Handling one event is, in this order: skip it if its done marker exists;
// compute its items from the current state (pure functions in decide.go);
// merge them into the open groups in one write (idempotent per item key,
// and skipped when the event's items already went out in a sealed group);
// write the state it changed (idempotent); write its done marker; and only
// then is the message acknowledged. A crash at any point leaves either the
// message unacknowledged (redelivered, and handled again with the same
// result) or everything written.
package engine
