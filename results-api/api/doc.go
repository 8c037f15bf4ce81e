// Package api holds the results API's OpenAPI document, the source of truth
// for the HTTP contract, and the Go types generated from it with oapi-codegen
// (types.gen.go; regenerate with `make generate`). The hand-written
// convert.go renders the domain types of internal/report in those shapes,
// so the HTTP handlers and the WebSocket frames share one rendering and
// neither has to import the other.
package api
