// Package controller holds the Scanner reconciler. It works in three steps,
// each reconcile recomputing everything from the cluster and results-api:
// observe (Pods → digests, this Scanner's Jobs, one batch lookup), decide
// (pure functions: what needs a scan, what fits under the concurrency cap,
// what is due for a retry) and act (record finished Jobs, publish events,
// delete finished Jobs, create new ones), then patch the status once.
package controller
