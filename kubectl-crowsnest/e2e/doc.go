// Package e2e tests kubectl-crowsnest against the real parts it talks to: a
// kube-apiserver and etcd (test/support/kubetest) and results-api on
// Postgres (test/support/resultsapitest: its binary), seeded with real Grype CycloneDX output
// from results-api/testdata/grype.
//
// What cannot run here: the API server's service proxy dials a Service's
// endpoint IP, and the API server refuses loopback endpoint addresses (and
// tests use loopback only), so no request travels the whole way API server
// → results-api. The proxy tests therefore stop at the API server (its
// authentication, its RBAC decision on services/proxy, its answers for a
// missing Service and for one without endpoints), and every command's output
// is tested through --server against the real results-api.
package e2e
