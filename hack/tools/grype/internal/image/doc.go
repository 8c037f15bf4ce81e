// Package image builds small OCI images offline from in-memory root
// filesystems (package databases, binaries, node_modules) and writes them as
// OCI image layouts that Grype scans with an `oci-dir:` source and that the
// local stack can push to a registry. Images are reproducible: fixed file
// times, owners and creation date, so the same input gives the same digest.
package image
