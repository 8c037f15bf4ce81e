// Package snapshot serves values computed from the store out of memory:
// a Memo keeps, per key, the last value computed, until it expires (a
// fixed age, so that other replicas' writes, which this one hears of only
// through the database, and the clock's effects show within that age) or
// stops being valid (its caller says, typically because a Generation it
// was computed at has moved on). At most one computation per key is in
// flight: concurrent requests for a missing value wait for the same one
// instead of each sending its statements to Postgres.
//
// A Generation counts this replica's writes: bump it after a write is
// committed, and read it before computing, so that a value computed from
// data older than the write is never taken for a newer one.
package snapshot
