// Package support holds the helpers that give Crowsnest's tests real
// backends: a Kubernetes control plane (kube-apiserver + etcd through envtest),
// a throwaway Postgres server, and an in-process NATS JetStream server.
//
// Each backend lives in its own subpackage so a test module only pulls in the
// dependencies it uses.
package support
