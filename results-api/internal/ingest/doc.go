// Package ingest turns an uploaded Grype CycloneDX document into a
// report.Report: it reads the body within a size limit (a gzip body whole
// and compressed first, so that the size its trailer declares is known,
// and bounds, the memory decompression takes: a gzip bomb is refused
// unread), caps the findings per report, checks that the JSON
// really is a CycloneDX BOM (cyclonedx-go alone decodes any JSON object into
// an empty BOM), and extracts one finding per (vulnerability id, affected
// component) with severity, CVSS, package and fixed-in versions. The
// document is decoded in one pass that builds only the fields ingest reads
// and checks the rest against cyclonedx-go's types (decode.go, schema.go);
// what that pass does not plainly accept is decoded by json.Unmarshal into
// cdx.BOM, which decides.
package ingest
