package image

import (
	"fmt"
	"strings"

	"github.com/crowsnest-dev/crowsnest/matcher/dbwrite/advisory"
)

// Apk is one entry of an Alpine package database (lib/apk/db/installed).
type Apk struct{ Name, Version, Origin, Description, License string }

// Deb is one entry of a dpkg status file (var/lib/dpkg/status).
type Deb struct{ Name, Version, Source, Description string }

const alpineRelease = `NAME="Alpine Linux"
ID=alpine
VERSION_ID=3.18.4
PRETTY_NAME="Alpine Linux v3.18"
HOME_URL="https://alpinelinux.org/"
BUG_REPORT_URL="https://gitlab.alpinelinux.org/alpine/aports/-/issues"
`

const debianRelease = `PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"
NAME="Debian GNU/Linux"
VERSION_ID="12"
VERSION="12 (bookworm)"
VERSION_CODENAME=bookworm
ID=debian
HOME_URL="https://www.debian.org/"
SUPPORT_URL="https://www.debian.org/support"
BUG_REPORT_URL="https://bugs.debian.org/"
`

var alpineBase = []Apk{
	{"musl", "1.2.4-r1", "musl", "the musl c library (libc) implementation", "MIT"},
	{"alpine-baselayout", "3.4.3-r1", "alpine-baselayout", "Alpine base dir structure and init scripts", "GPL-2.0-only"},
	{"zlib", "1.2.13-r1", "zlib", "A compression/decompression Library", "Zlib"},
}

// Alpine is an Alpine 3.18 root filesystem with an old busybox and OpenSSL.
func Alpine() Spec {
	pkgs := append(append([]Apk(nil), alpineBase...),
		Apk{"busybox", "1.36.1-r2", "busybox", "Size optimized toolbox of many common UNIX utilities", "GPL-2.0-only"},
		Apk{"busybox-binsh", "1.36.1-r2", "busybox", "busybox ash /bin/sh", "GPL-2.0-only"},
		Apk{"libcrypto3", "3.1.1-r1", "openssl", "Crypto library from openssl", "Apache-2.0"},
		Apk{"libssl3", "3.1.1-r1", "openssl", "SSL shared libraries", "Apache-2.0"},
	)
	return Spec{Name: "alpine", Cmd: []string{"/bin/sh"}, Files: alpineFiles(pkgs)}
}

// Clean is an Alpine 3.18 root filesystem with no known vulnerabilities.
func Clean() Spec {
	return Spec{Name: "clean", Cmd: []string{"/bin/sh"}, Files: alpineFiles(alpineBase)}
}

// Large is an Alpine root filesystem with advisory.SyntheticPackages made-up
// packages that only the synthetic advisories match (benchmarks only).
func Large() Spec {
	pkgs := append([]Apk(nil), alpineBase...)
	for i := range advisory.SyntheticPackages {
		pkgs = append(pkgs, Apk{advisory.SyntheticPackage(i), advisory.SyntheticInstalled, advisory.SyntheticPackage(i),
			"Synthetic package for Crowsnest benchmarks (not real)", "MIT"})
	}
	return Spec{Name: "large", Cmd: []string{"/bin/sh"}, Files: alpineFiles(pkgs)}
}

func alpineFiles(pkgs []Apk) []File {
	var db strings.Builder
	for _, p := range pkgs {
		fmt.Fprintf(&db, "P:%s\nV:%s\nA:x86_64\nT:%s\nU:https://alpinelinux.org\nL:%s\no:%s\nm:Crowsnest Fixtures <fixtures@crowsnest.invalid>\nt:1698796800\n\n",
			p.Name, p.Version, p.Description, p.License, p.Origin)
	}
	return []File{
		{Path: "etc/os-release", Data: []byte(alpineRelease)},
		{Path: "etc/alpine-release", Data: []byte("3.18.4\n")},
		{Path: "lib/apk/db/installed", Data: []byte(db.String())},
	}
}

// Debian is a Debian 12 root filesystem with an early-bookworm OpenSSL,
// glibc and zlib.
func Debian() Spec {
	pkgs := []Deb{
		{"base-files", "12.4+deb12u1", "base-files", "Debian base system miscellaneous files"},
		{"bash", "5.2.15-2+b2", "bash", "GNU Bourne Again SHell"},
		{"libc6", "2.36-9+deb12u1", "glibc", "GNU C Library: Shared libraries"},
		{"libssl3", "3.0.9-1", "openssl", "Secure Sockets Layer toolkit - shared libraries"},
		{"openssl", "3.0.9-1", "openssl", "Secure Sockets Layer toolkit - cryptographic utility"},
		{"zlib1g", "1:1.2.13.dfsg-1", "zlib", "compression library - runtime"},
	}
	var st strings.Builder
	for _, p := range pkgs {
		fmt.Fprintf(&st, "Package: %s\nStatus: install ok installed\nPriority: optional\nSection: libs\nInstalled-Size: 1024\n"+
			"Maintainer: Crowsnest Fixtures <fixtures@crowsnest.invalid>\nArchitecture: amd64\nSource: %s\nVersion: %s\nDescription: %s\n\n",
			p.Name, p.Source, p.Version, p.Description)
	}
	return Spec{Name: "debian", Cmd: []string{"/bin/bash"}, Files: []File{
		{Path: "etc/os-release", Data: []byte(debianRelease)},
		{Path: "etc/debian_version", Data: []byte("12.2\n")},
		{Path: "var/lib/dpkg/status", Data: []byte(st.String())},
	}}
}

// GoBinary is a scratch image holding one Go binary (its build info lists
// the golang.org/x modules it links).
func GoBinary(binary []byte) Spec {
	return Spec{Name: "gobinary", Cmd: []string{"/usr/local/bin/vulnerable-app"}, Files: []File{
		{Path: "usr/local/bin/vulnerable-app", Mode: 0o755, Data: binary},
	}}
}

// Node is a scratch-based Node.js app image with an installed node_modules
// tree (Grype catalogs installed packages, not lockfiles, in images).
func Node() Spec {
	mods := [][2]string{{"lodash", "4.17.15"}, {"minimist", "1.2.5"}, {"semver", "7.5.1"}, {"ms", "2.1.3"}}
	files := []File{{Path: "app/package.json", Data: packageJSON("crowsnest-demo-app", "1.0.0", mods)}}
	for _, m := range mods {
		files = append(files, File{Path: "app/node_modules/" + m[0] + "/package.json", Data: packageJSON(m[0], m[1], nil)})
	}
	return Spec{Name: "node", Cmd: []string{"node", "/app/index.js"}, Files: files}
}

func packageJSON(name, version string, deps [][2]string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "{\n  \"name\": %q,\n  \"version\": %q,\n  \"license\": \"MIT\"", name, version)
	if len(deps) > 0 {
		b.WriteString(",\n  \"dependencies\": {")
		for i, d := range deps {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, "\n    %q: %q", d[0], d[1])
		}
		b.WriteString("\n  }")
	}
	b.WriteString("\n}\n")
	return []byte(b.String())
}
