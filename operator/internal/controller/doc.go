// Package controller holds the Scanner reconciler and Setup, the one place
// that wires it into a manager (cmd/main.go and the tests both call it). A
// reconcile recomputes everything from the cluster and results-api in three
// steps: observe (Pods → digests, this Scanner's Jobs, one batch lookup),
// decide (pure functions: classify says what each digest needs, allocate
// fits those needs under the concurrency cap and retry times) and act
// (record finished Jobs, publish events, delete finished Jobs, create new
// ones). The status is computed by pure setters and patched once, in a
// defer, on every path, a failed reconcile included.
package controller
