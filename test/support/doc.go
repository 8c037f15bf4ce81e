// Package support holds the helpers that give Crowsnest's tests real
// backends: a Kubernetes control plane (kube-apiserver + etcd through envtest),
// a throwaway Postgres server, an in-process NATS JetStream server, and
// results-api's binary for other components' tests (resultsapitest).
//
// Each backend lives in its own subpackage so a test module only pulls in the
// dependencies it uses.
package support
