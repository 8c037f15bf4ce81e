// Package api holds the results API's OpenAPI document, the source of truth
// for the HTTP contract, and the Go types generated from it with oapi-codegen
// (types.gen.go; regenerate with `make generate`). It is a contract package:
// it imports nothing of results-api's internals (imports_test.go holds it to
// that), so a client can use the types; the server renders its domain types
// in these shapes in internal/render.
package api
