//go:build tools

// Package tools pins kube-router, whose network policy controller alone
// (--run-firewall) enforces NetworkPolicies on the local stack's real node;
// hack/tools.sh kube-router builds and caches it.
package tools

import (
	_ "github.com/cloudnativelabs/kube-router/v2/cmd/kube-router"
)
