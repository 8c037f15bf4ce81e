// Package resultsapi holds the types of results-api's REST contract that the
// plugin reads (ReportSummary, ReportDetail, Vulnerability, Change, …),
// generated into types.gen.go from results-api/api/openapi.yaml for the
// operations the plugin calls. The plugin's module cannot import
// results-api/api, the server's copy of these types (that would need a
// replace directive, which `go install …@latest` refuses), so it generates
// its own from the same document; `make generate` rewrites them and
// `make verify` fails when they are stale.
package resultsapi

//go:generate ../../../bin/oapi-codegen -config oapi-codegen.yaml ../../../results-api/api/openapi.yaml
