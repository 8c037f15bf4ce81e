// Package ingest turns an uploaded Grype CycloneDX document into a
// report.Report: it reads the body within a size limit (a gzip body whole
// and compressed first, so that the size its trailer declares is known,
// and bounds, the memory decompression takes: a gzip bomb is refused
// unread), caps the findings per report, checks that the JSON
// really is a CycloneDX BOM (cyclonedx-go alone decodes any JSON object into
// an empty BOM), and extracts one finding per (vulnerability id, affected
// component) with severity, CVSS, package and fixed-in versions.
package ingest
