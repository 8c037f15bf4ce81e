// Command imagebuild builds Crowsnest's container images without a Docker
// engine: each component's static binary (compiled by the Makefile's
// build-<name> target for every platform) on a small reproducible base, as an
// OCI image layout holding a multi-platform image index. It also checks the
// images' content and pushes the layouts to a registry.
//
//	imagebuild build -component operator -version v0.1.0 -revision $(git rev-parse HEAD) -platforms linux/amd64,linux/arm64 -out dist/images/operator
//	imagebuild check -layout dist/images/operator -component operator -revision … -platforms …
//	imagebuild push  -layout dist/images/operator -repo ghcr.io/crowsnest-dev/crowsnest-operator
package main
