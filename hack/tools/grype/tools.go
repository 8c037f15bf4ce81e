//go:build tools

// Package tools pins the grype CLI built by hack/tools.sh grype.
package tools

import _ "github.com/anchore/grype/cmd/grype"
