// Package stack runs the whole of Crowsnest on one machine: a real control
// plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler) with
// kwok's fake Nodes for cheap workload Pods, one real node (containerd and a
// kubelet, package internal/node) where the scan Pods run as containers from
// the images make images builds, an OCI registry with the demo and scan
// images, NATS, Postgres, and results-api, the matcher, the notifier and the
// operator as processes. The services listen where the node's Pods reach
// them: the node network's gateway (HostIP). `make demo` runs it; the
// end-to-end tests in e2e/ drive it.
package stack
