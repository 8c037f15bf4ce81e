//go:build tools

// Package tools pins Tilt for hack/tools.sh; `make verify-tiltfile` uses it to
// evaluate the Tiltfile offline.
package tools

import _ "github.com/tilt-dev/tilt/cmd/tilt"
