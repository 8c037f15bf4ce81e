// Package snapshot counts a replica's writes, so that values computed from
// the store and served out of memory (lru.Memo: the /stats snapshots) are
// renewed after a change: a Generation is bumped after a write is
// committed and read before computing, so that a value computed from data
// older than the write is never taken for a newer one. Other replicas'
// writes, which this one hears of only through the database, show within
// the memo's age.
package snapshot
