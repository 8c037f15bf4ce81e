// Package registry runs an OCI registry on loopback (go-containerregistry's
// in-memory pkg/registry) and pushes the demo images into it. The images are
// built offline and byte-for-byte reproducibly, so their digests are the same
// on every run; they hold installed-package databases (apk, dpkg), a Go
// binary with build info and a Node app's node_modules, matching the
// advisories in the project's tiny Grype DB (hack/tools/grype).
package registry
