package scanjob

import (
	"fmt"
	"regexp"
)

// platformPattern is os/arch[/variant] as nodes label themselves
// (kubernetes.io/os, kubernetes.io/arch) and OCI image indexes name
// platforms: "linux/amd64", "linux/arm64", "linux/arm/v7", "windows/amd64".
var platformPattern = regexp.MustCompile(`^[a-z0-9]{1,32}/[a-z0-9_]{1,32}(/[a-z0-9]{1,32})?$`)

// ValidPlatform checks that p is an os/arch[/variant] platform for Grype's
// --platform. Build leaves an invalid one out (Grype then scans its default
// platform); the caller that derives it should check it first.
func ValidPlatform(p string) error {
	if !platformPattern.MatchString(p) {
		return fmt.Errorf("platform %q: want os/arch[/variant], e.g. linux/arm64", p)
	}
	return nil
}
