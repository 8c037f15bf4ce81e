package oci

import (
	"fmt"
	"slices"
	"strings"
)

// Component is one image: which binary it holds and how make builds it.
type Component struct {
	// Name is the component (operator, results-api, …); the image repository
	// is crowsnest-<Name>.
	Name string
	// Binary is the executable's file name; the image holds it at /<Binary>.
	Binary string
	// Title is the org.opencontainers.image.title label.
	Title string
	// Licenses is the org.opencontainers.image.licenses label (SPDX).
	Licenses string
	// Ports the image exposes (the config's ExposedPorts).
	Ports []string
	// HelpExit is the exit code of `<binary> --help` (0 for every binary
	// here; the content checks hold it).
	HelpExit int
	// StampsVersion: `<binary> --version` prints "<name> <version> (revision
	// <revision>, …)" from the build stamp (api/buildinfo) make links in.
	StampsVersion bool
	// Embeds names repository files the binary must be built with (results-api
	// embeds the web UI that make build-web copies into its source tree).
	Embeds []string
}

// Source is the org.opencontainers.image.source label of every image.
const Source = "https://github.com/crowsnest-dev/crowsnest"

// crowsnestLicenses is the licenses label of Crowsnest's own images: the
// repository does not declare a license yet, so the SPDX "no assertion".
const crowsnestLicenses = "NOASSERTION"

// Components are every image make images builds, in build order. Each is
// built by `make build-<Name> BIN=… GOOS=… GOARCH=…`.
var Components = []Component{
	{Name: "operator", Binary: "operator", Title: "Crowsnest operator", Licenses: crowsnestLicenses, StampsVersion: true},
	{
		Name: "results-api", Binary: "results-api", Title: "Crowsnest results API and dashboard", Licenses: crowsnestLicenses,
		Ports: []string{"8080/tcp"}, Embeds: []string{"results-api/internal/ui/dist/index.html"}, StampsVersion: true,
	},
	{Name: "uploader", Binary: "uploader", Title: "Crowsnest scan uploader", Licenses: crowsnestLicenses, StampsVersion: true},
	{Name: "matcher", Binary: "matcher", Title: "Crowsnest matcher", Licenses: crowsnestLicenses, Ports: []string{"8080/tcp"}, StampsVersion: true},
	{Name: "notifier", Binary: "notifier", Title: "Crowsnest notifier", Licenses: crowsnestLicenses, Ports: []string{"8080/tcp"}, StampsVersion: true},
	// The Grype CLI the scan Jobs run, built from its Go module (hack/tools/grype);
	// tagged with Grype's own version.
	{Name: "grype", Binary: "grype", Title: "Grype (Crowsnest scan image)", Licenses: "Apache-2.0"},
	// The bundled NATS of the chart: nats-server at the pinned version
	// (hack/versions.env), built from its Go module; tagged with its version.
	{Name: "nats", Binary: "nats-server", Title: "NATS server (Crowsnest bundled NATS)", Licenses: "Apache-2.0", Ports: []string{"4222/tcp", "8222/tcp"}},
}

// Lookup returns the component called name.
func Lookup(name string) (Component, error) {
	i := slices.IndexFunc(Components, func(c Component) bool { return c.Name == name })
	if i < 0 {
		names := make([]string, 0, len(Components))
		for _, c := range Components {
			names = append(names, c.Name)
		}
		return Component{}, fmt.Errorf("unknown component %q (have %s)", name, strings.Join(names, ", "))
	}
	return Components[i], nil
}
