// Package controller holds the Scanner reconciler and Setup, the one place
// that wires it into a manager (cmd/main.go and the tests both call it). A
// reconcile recomputes everything from the cluster and results-api in three
// steps: observe (Pods → digests, this Scanner's Jobs, one batch lookup),
// decide (pure functions: classify says what each digest needs, allocate
// fits those needs under the concurrency cap and retry times) and act
// (record finished Jobs, publish events, retire finished Jobs, create new
// ones). Every scan Job carries the operator's finalizer, removed only when
// the operator is done with the Job (finalizer.go), so a Job deleted early
// (its TTL) keeps its outcome, attempt and undelivered job.done. The status
// is computed by pure setters and patched once, in a defer, on every path, a
// failed reconcile included.
package controller
