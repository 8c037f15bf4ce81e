// Package ingest turns an uploaded Grype CycloneDX document into a
// report.Report: it reads the body within a size limit (also after gzip
// decompression, so a gzip bomb stops at the limit), checks that the JSON
// really is a CycloneDX BOM (cyclonedx-go alone decodes any JSON object into
// an empty BOM), and extracts one finding per (vulnerability id, affected
// component) with severity, CVSS, package and fixed-in versions.
package ingest
