// Package oci assembles Crowsnest's container images with go-containerregistry:
// a reproducible base layer built here (users, /tmp, CA certificates; no shell,
// no package manager), one layer with the component's static binary, an OCI
// image config with labels, one image per platform in an OCI image index, and
// an OCI image layout on disk that make images-push sends to a registry.
package oci
