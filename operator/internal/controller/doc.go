// Package controller is the home of the operator's two controllers, one
// package each (after Cluster API's internal/controllers/<kind>):
//
//   - scanner: the Scanner reconciler, which turns the Pods of its
//     namespace into scan Jobs (observe → decide → act), records their
//     outcomes and publishes events;
//   - clusterscanner: the ClusterScanner reconciler, which keeps a
//     generated Scanner, the scan ServiceAccount and the scan
//     NetworkPolicy in every namespace it covers.
//
// What they share sits beside them: the cluster-wide budget of scans
// (internal/scanbudget), the watch predicates (internal/predicates), the
// delayed-enqueue handler (internal/enqueue), and the condition reasons
// and annotations next to the API types (api/v1alpha1). This package holds
// only NewScheme, which the manager and every test client use.
package controller
