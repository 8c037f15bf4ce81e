// Package charttest renders the umbrella chart helm/crowsnest with the
// pinned Helm binary and checks the rendered objects: Pod Security
// "restricted", RBAC no wider than the operator's generated role, no
// plain-text secrets, pinned images. Its tests also apply every rendered
// object with a server-side dry-run against a real kube-apiserver
// (test/support/kubetest).
package charttest
