package oci

import (
	"bytes"
	"encoding/pem"
	"fmt"
	"runtime/debug"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// The non-root user every image runs as (distroless's "nonroot").
const (
	UID  = 65532
	User = "65532:65532"
)

// CAFile is where the base layer puts the CA certificates: the path Go's
// crypto/x509 (and so every binary here) reads first on Linux.
const CAFile = "etc/ssl/certs/ca-certificates.crt"

// caModule is the Go module the CA certificates come from, pinned in go.mod.
const caModule = "golang.org/x/crypto/x509roots/fallback"

// LabelCASource records the pinned CA bundle (module@version) in each image.
const LabelCASource = "dev.crowsnest.image.ca-certificates"

const passwd = `root:x:0:0:root:/root:/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin
nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin
`

const group = `root:x:0:
nobody:x:65534:
nonroot:x:65532:
`

// nsswitch.conf makes Go's resolver (and any libc) read /etc/hosts first.
const nsswitch = "hosts: files dns\n"

// baseLayer is the reproducible base every image starts from: users and
// groups, a world-writable sticky /tmp, the nonroot home and the CA
// certificates. No shell, no package manager, no libc: the binaries are static.
func baseLayer(mtime time.Time) (v1.Layer, error) {
	cas, err := caBundle()
	if err != nil {
		return nil, err
	}
	return tarLayer([]entry{
		{name: "etc/", mode: 0o755},
		{name: "etc/group", mode: 0o644, data: []byte(group)},
		{name: "etc/nsswitch.conf", mode: 0o644, data: []byte(nsswitch)},
		{name: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{name: "etc/ssl/", mode: 0o755},
		{name: "etc/ssl/certs/", mode: 0o755},
		{name: CAFile, mode: 0o644, data: cas},
		{name: "home/", mode: 0o755},
		{name: "home/nonroot/", mode: 0o700, uid: UID, gid: UID},
		{name: "tmp/", mode: 0o1777},
	}, mtime)
}

// caBundle is the PEM bundle of the pinned module's unconstrained roots.
// Roots the module trusts only with a constraint (e.g. distrusted after a
// date) are left out: a PEM file cannot carry the constraint.
func caBundle() ([]byte, error) {
	var buf bytes.Buffer
	for r := range bundle.Roots() {
		if r.Constraint != nil {
			continue
		}
		if err := pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: r.Certificate}); err != nil {
			return nil, err
		}
	}
	if buf.Len() == 0 {
		return nil, fmt.Errorf("%s: no certificates", caModule)
	}
	return buf.Bytes(), nil
}

// CASource is the pinned CA module as module@version, read from the builder's
// own build information (go.mod pins it).
func CASource() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == caModule {
				return d.Path + "@" + d.Version
			}
		}
	}
	return caModule + "@unknown"
}
