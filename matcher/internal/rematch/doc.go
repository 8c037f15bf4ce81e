// Package rematch matches stored SBOMs again when the vulnerability DB
// changes.
//
// A Matcher opens one Grype v6 DB read-only and matches Grype CycloneDX
// reports (which list every cataloged package, so they are complete SBOMs)
// with the same code path and defaults as `grype sbom:FILE -o
// cyclonedx-json`, adding the DB build to the output's metadata. Per DB and
// within a memory bound, it remembers what Grype's matchers answered for each
// package, so the packages a fleet's images share are matched once
// (cache.go).
//
// A Pass walks every report stored in results-api, matches its BOM and
// compares the findings' fingerprint (the contract's api/finding) with the
// one results-api lists: it encodes and uploads the new report only when
// they differ, and records the DB build of the unchanged reports in one
// request per checkpoint. Its progress lives in a small JSON file, saved per
// page or checkpoint, so a process killed mid-pass resumes where it stopped
// and matches again only what was not saved (page.go); Runner restarts the
// pass when a newer DB arrives.
package rematch
