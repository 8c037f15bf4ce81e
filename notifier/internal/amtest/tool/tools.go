//go:build tools

// Package tool pins Alertmanager for `go build`.
package tool

import _ "github.com/prometheus/alertmanager/cmd/alertmanager"
