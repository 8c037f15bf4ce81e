package main

import "runtime/debug"

// matchGCPercent is the garbage collector's target while a memory limit is
// in effect. Grype allocates heavily per package (its store's rows, gorm's
// scans, the memo's copies), and at Go's default of 100 the collector took a
// large share of a re-match's CPU; at 400 the heap may grow to five times
// what is live between collections, which the soft memory limit
// (memlimit.Set, 90 % of the container's) still caps: near the limit the
// collector runs as often as it must. docs/benchmarks.md, "matcher: the
// collector's target".
const matchGCPercent = 400

// setGCPercent raises the collector's target to matchGCPercent when the heap
// has a memory limit (limit > 0) and GOGC does not set the target. Without a
// limit the default stays, so a matcher outside a container does not grow to
// five times its live heap unbounded. It returns the target now in effect.
func setGCPercent(getenv func(string) string, limit int64) int {
	if getenv("GOGC") != "" || limit <= 0 {
		pct := debug.SetGCPercent(100)
		debug.SetGCPercent(pct)
		return pct
	}
	debug.SetGCPercent(matchGCPercent)
	return matchGCPercent
}
