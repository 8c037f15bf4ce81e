// Package teardown removes what a stack or a test started on the host
// (processes, containers, mounts, network links) on every way out: at the
// end, and when the run is stopped from outside with SIGTERM or SIGINT, as
// a CI run stops the suites it runs beside each other.
//
// OnSignal is the signal half, for whoever owns a close function (the
// stack). Steps is a test's list of stop functions, each run exactly once,
// last added first: by the test itself (to check what its stop leaves), at
// its end, or on a signal — whichever comes first, the others wait for it.
package teardown
