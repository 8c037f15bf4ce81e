// Package scanjob builds the scan Job for one image digest with a single pure
// function, Build, pinned by golden files (go test ./internal/scanjob -update
// rewrites them). The Job runs Grype as an init container writing CycloneDX
// JSON to an emptyDir, then the uploader, which PUTs it to results-api with a
// projected service-account token. Its Pod passes Pod Security "restricted".
package scanjob
