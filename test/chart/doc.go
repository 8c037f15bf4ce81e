// Package charttest renders the umbrella chart helm/crowsnest with the
// pinned Helm binary and checks the rendered objects: Pod Security
// "restricted", RBAC exactly as pinned (the operator's generated roles,
// results-api's authorization, the roles for people), no plain-text
// secrets, pinned images, and which connections the NetworkPolicies open.
// Its tests also apply every rendered object with a server-side dry-run
// against a real kube-apiserver (test/support/kubetest), and apply the RBAC
// for real to ask the server's authorizer who may do what.
package charttest
