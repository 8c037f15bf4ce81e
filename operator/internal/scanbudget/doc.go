// Package scanbudget is the cluster-wide budget every Scanner's reconcile
// draws its new scan Jobs from: claims on digests (one Job per digest in
// the whole cluster, even before the cache shows a Job just created), the
// cluster-wide concurrency cap shared fairly between the Scanners that
// wait for it (max-min fairness, oldest-waiting first), and the
// cluster-wide rate of rescans. It holds no API client: the caller passes
// what the cache shows, so every decision is a table test with no API
// server. (Not to be confused with Kubernetes admission control.)
package scanbudget
