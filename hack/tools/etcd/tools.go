//go:build tools

// Package tools pins etcd for hack/tools.sh.
package tools

import _ "go.etcd.io/etcd/server/v3"
