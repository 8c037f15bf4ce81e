// Package exception applies triage decisions — the VulnerabilityException
// (namespaced) and ClusterVulnerabilityException (cluster-scoped) custom
// resources of crowsnest.dev/v1alpha1 — to what readers see.
//
// A decision never changes a stored report: results-api marks the findings
// it covers as suppressed when it answers a read, for the reader's view
// only. A namespaced exception applies to views of its own namespace; a
// cluster one to every view. In a view of several namespaces a finding is
// suppressed only when it is suppressed in every namespace of the view in
// which its image runs (see Set.Decide), so a team can never hide a finding
// from another team that runs the same digest.
//
// Kubernetes CEL has no clock, so admission cannot refuse an expiresAt in
// the past or too far ahead: an exception whose expiresAt has passed, or
// lies more than the maximum lifetime after its creation, does not apply
// (State), and the audit lists it.
package exception
