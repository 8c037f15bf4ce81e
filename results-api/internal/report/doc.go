// Package report holds the results API's domain types: a stored report with
// its findings, severities, digests and scan status. Ingest produces them,
// the store persists them, and the HTTP layer renders them.
package report
