package scanjob

import "strings"

// insecure tells whether image's registry host is one Grype may reach over
// plain HTTP (--insecure-registries: a local development registry).
func insecure(image string, registries []string) bool {
	host, _, ok := strings.Cut(image, "/")
	if !ok || len(registries) == 0 {
		return false
	}
	for _, r := range registries {
		if r == host {
			return true
		}
	}
	return false
}
