// Package store persists reports, findings, raw BOMs and scan status in
// Postgres through gorm. It is the only package that imports gorm; callers
// see report domain types and the sentinel errors ErrNotFound, ErrBadCursor
// and ErrTimeout (Postgres' statement_timeout, set on every pooled
// connection). BOMs are stored zstd-compressed and read back as a stream
// (OpenBOM), never decompressed whole.
//
// The schema is versioned SQL in migrations/, embedded in the binary and
// applied at start-up with goose (chosen over golang-migrate for its
// Provider API: no global state, an embed.FS source, plain SQL files with
// up and down sections, and it runs on the *sql.DB underneath gorm).
// Replicas starting together migrate in turn, under a Postgres session
// advisory lock (MigrationLockKey).
//
// A report that replaces another is compared with it in the same
// transaction, under the report's row lock: the stored findings' keys are
// read before they are replaced, report.Diff computes the new and resolved
// findings, and the change goes into report_changes and
// report_change_findings (a digest's first report records a baseline;
// the same keys record nothing). A report whose findings are identical to
// the stored ones (fingerprint) keeps its findings rows. The change
// history outlives a deleted report (ListChanges).
//
// Report changes write the events they emit into the event_outbox table in
// their own transaction (Announcer); RelayOutbox is one step of the relay
// that publishes them (internal/events): it claims the head event of each
// digest with FOR UPDATE SKIP LOCKED, so relays on several replicas never
// publish one event at the same time nor a digest's events out of order.
package store
