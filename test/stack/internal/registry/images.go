package registry

import (
	"fmt"
	"os"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Built is a demo image before it is pushed.
type Built struct {
	Name, Tag string
	Image     v1.Image
	Unpushed  bool // its Pods point at a digest the registry does not have
}

// DemoImages builds the demo images. goBinary is a Go program with build
// info (hack/tools/grype/testdata/gobinary); empty leaves the Go image out.
func DemoImages(goBinary string) ([]Built, error) {
	var out []Built
	add := func(name, tag string, unpushed bool, build func() (v1.Image, error)) error {
		img, err := build()
		if err != nil {
			return fmt.Errorf("build demo image %s: %w", name, err)
		}
		out = append(out, Built{Name: name, Tag: tag, Image: img, Unpushed: unpushed})
		return nil
	}
	if err := add("alpine", "3.18", false, func() (v1.Image, error) { return alpine("") }); err != nil {
		return nil, err
	}
	if err := add("debian", "12", false, debian); err != nil {
		return nil, err
	}
	if err := add("node-app", "1.0", false, nodeApp); err != nil {
		return nil, err
	}
	if goBinary != "" {
		bin, err := os.ReadFile(goBinary)
		if err != nil {
			return nil, fmt.Errorf("read Go demo binary: %w", err)
		}
		if err := add("go-app", "1.0", false, func() (v1.Image, error) { return goApp(bin) }); err != nil {
			return nil, err
		}
	}
	// A distinct digest that only the ignored demo Pod runs.
	if err := add("internal", "2.4", false, func() (v1.Image, error) { return alpine("internal") }); err != nil {
		return nil, err
	}
	// Built but never pushed: scanning it fails the way a deleted or
	// private image does (MANIFEST_UNKNOWN), to show a failure reason.
	if err := add("private", "1.0", true, func() (v1.Image, error) { return alpine("private") }); err != nil {
		return nil, err
	}
	return out, nil
}

func alpine(variant string) (v1.Image, error) {
	l, err := layer(alpineFiles(variant))
	if err != nil {
		return nil, err
	}
	return image([]string{"/bin/busybox", "sh"}, l)
}

// alpineFiles are the Alpine demo image's files: the OpenSSL and other
// packages the demo DB has advisories for, in apk's database.
func alpineFiles(variant string) map[string]file {
	return map[string]file{
		"etc/os-release":        {data: []byte(alpineOSRelease)},
		"etc/alpine-release":    {data: []byte("3.18.4\n")},
		"lib/apk/db/installed":  {data: []byte(apkInstalled)},
		"bin/busybox":           {mode: 0o755, data: []byte("#!/bin/sh\n# placeholder: the demo never runs this image\n")},
		"etc/crowsnest-variant": {data: []byte(variant + "\n")},
	}
}

func debian() (v1.Image, error) {
	l, err := layer(map[string]file{
		"etc/os-release":      {data: []byte(debianOSRelease)},
		"etc/debian_version":  {data: []byte("12.1\n")},
		"var/lib/dpkg/status": {data: []byte(dpkgStatus)},
	})
	if err != nil {
		return nil, err
	}
	return image([]string{"/bin/sh"}, l)
}

func goApp(bin []byte) (v1.Image, error) {
	l, err := layer(map[string]file{"app/vulnerable-app": {mode: 0o755, data: bin}})
	if err != nil {
		return nil, err
	}
	return image([]string{"/app/vulnerable-app"}, l)
}

func nodeApp() (v1.Image, error) {
	files := map[string]file{
		"app/package.json":      {data: []byte(appPackageJSON)},
		"app/package-lock.json": {data: []byte(appPackageLock)},
		"app/server.js":         {data: []byte("const _ = require('lodash');\nconsole.log(_.kebabCase('crowsnest demo'));\n")},
	}
	for _, m := range nodeModules {
		files["app/node_modules/"+m.name+"/package.json"] = file{data: []byte(fmt.Sprintf(
			"{\n  \"name\": %q,\n  \"version\": %q,\n  \"license\": %q,\n  \"description\": %q\n}\n", m.name, m.version, m.license, m.desc))}
	}
	l, err := layer(files)
	if err != nil {
		return nil, err
	}
	return image([]string{"node", "/app/server.js"}, l)
}

type nodeModule struct{ name, version, license, desc string }

// nodeModules are installed at versions the demo DB has advisories for.
var nodeModules = []nodeModule{
	{"lodash", "4.17.15", "MIT", "Lodash modular utilities."},
	{"minimist", "1.2.5", "MIT", "parse argument options"},
	{"semver", "7.3.8", "ISC", "The semantic version parser used by npm."},
}

var appPackageJSON = `{
  "name": "crowsnest-demo-node-app",
  "version": "1.0.0",
  "private": true,
  "dependencies": {
    "lodash": "4.17.15",
    "minimist": "1.2.5",
    "semver": "7.3.8"
  }
}
`

var appPackageLock = func() string {
	var b strings.Builder
	b.WriteString("{\n  \"name\": \"crowsnest-demo-node-app\",\n  \"version\": \"1.0.0\",\n  \"lockfileVersion\": 3,\n  \"requires\": true,\n  \"packages\": {\n")
	b.WriteString("    \"\": {\"name\": \"crowsnest-demo-node-app\", \"version\": \"1.0.0\"}")
	for _, m := range nodeModules {
		fmt.Fprintf(&b, ",\n    \"node_modules/%s\": {\"version\": %q, \"resolved\": \"https://registry.npmjs.org/%s/-/%s-%s.tgz\", \"license\": %q}",
			m.name, m.version, m.name, m.name, m.version, m.license)
	}
	b.WriteString("\n  }\n}\n")
	return b.String()
}()

// Variant is an Alpine-like image with its own digest, for tests that need
// a digest nobody has scanned yet.
func Variant(name string) (Built, error) {
	img, err := alpine(name)
	if err != nil {
		return Built{}, err
	}
	return Built{Name: name, Tag: "1.0", Image: img}, nil
}
