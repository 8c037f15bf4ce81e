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
// uploads the new report when its findings changed, or records the DB build
// when they did not. Its progress lives in a small JSON file, so a process
// killed mid-pass resumes where it stopped; Runner restarts the pass when a
// newer DB arrives.
package rematch
