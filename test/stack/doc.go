// Package stack runs the whole of Crowsnest on one machine, without a
// container runtime: a real control plane (etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler) with kwok's fake Nodes, a loopback
// OCI registry with demo images, NATS, Postgres, results-api and the
// operator as processes, and a scan executor that runs scan-Job Pods' Grype
// and uploader containers as local processes. `make demo` runs it; the
// end-to-end tests in this package drive it.
package stack
