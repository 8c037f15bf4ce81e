// Package controlplane runs a real Kubernetes control plane on loopback:
// etcd and kube-apiserver through controller-runtime's envtest (which
// generates serving certificates and service-account signing keys, so
// TokenRequest and TokenReview work), plus kube-controller-manager,
// kube-scheduler and kwok with fake Nodes, as child processes.
package controlplane
