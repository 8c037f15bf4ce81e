// Package imagecheck checks what an image layout built by imagebuild holds:
// the platforms of its index, a numeric non-root user, no shell or package
// manager in any layer, the static binary for the right architecture (and,
// on the host's architecture, that it runs), the base files and the labels.
// make images runs it on the release layouts; the module's tests run it on
// freshly built ones.
package imagecheck
