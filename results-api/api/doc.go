// Package api holds the results API's OpenAPI document, the source of truth
// for the HTTP contract, and the Go types generated from it with oapi-codegen
// (types.gen.go; regenerate with `make generate`).
package api
