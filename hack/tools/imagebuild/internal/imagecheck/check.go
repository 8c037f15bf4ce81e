package imagecheck

import (
	"archive/tar"
	"bytes"
	"crypto/x509"
	"debug/elf"
	"fmt"
	"io"
	"path"
	"runtime"
	"slices"
	"strconv"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/crowsnest-dev/crowsnest/hack/tools/imagebuild/internal/oci"
)

// Want is what the layout must hold.
type Want struct {
	Component oci.Component
	// Revision the labels must carry.
	Revision string
	// Platforms the index must hold, exactly, in this order.
	Platforms []v1.Platform
}

// machines maps GOARCH to the ELF machine of its binaries.
var machines = map[string]elf.Machine{
	"amd64": elf.EM_X86_64,
	"arm64": elf.EM_AARCH64,
}

// forbidden are paths no image may hold: shells and package managers.
var forbidden = []string{
	"bin/sh", "bin/bash", "bin/ash", "bin/dash", "bin/busybox",
	"usr/bin/sh", "usr/bin/bash", "usr/bin/dash", "usr/bin/zsh",
	"usr/bin/apt", "usr/bin/apt-get", "usr/bin/dpkg", "sbin/apk", "usr/bin/yum", "usr/bin/dnf",
}

// allowedTop are the only top-level entries an image may have (besides its binary).
var allowedTop = []string{"etc", "home", "tmp"}

// Check reads the layout at dir and returns every problem found.
func Check(dir string, want Want) ([]string, error) {
	idx, refName, err := oci.ReadLayout(dir)
	if err != nil {
		return nil, err
	}
	var problems []string
	addf := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }
	if refName == "" {
		addf("index.json: no %s annotation", oci.RefName)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	var got []string
	for _, d := range m.Manifests {
		if d.Platform == nil {
			addf("manifest %s: no platform", d.Digest)
			continue
		}
		got = append(got, d.Platform.String())
	}
	var wantPs []string
	for _, p := range want.Platforms {
		wantPs = append(wantPs, p.String())
	}
	if !slices.Equal(got, wantPs) {
		addf("index platforms = %v, want %v", got, wantPs)
	}
	for _, d := range m.Manifests {
		if d.Platform == nil {
			continue
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			return nil, err
		}
		ps, err := checkImage(img, *d.Platform, want)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", d.Platform, err)
		}
		for _, p := range ps {
			addf("%s: %s", d.Platform, p)
		}
	}
	return problems, nil
}

// checkImage checks one platform's image.
func checkImage(img v1.Image, p v1.Platform, want Want) ([]string, error) {
	var problems []string
	addf := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	c := want.Component
	if cf.OS != p.OS || cf.Architecture != p.Architecture {
		addf("config platform %s/%s", cf.OS, cf.Architecture)
	}
	if err := numericNonRoot(cf.Config.User); err != nil {
		addf("user: %v", err)
	}
	if !slices.Equal(cf.Config.Entrypoint, []string{"/" + c.Binary}) {
		addf("entrypoint = %q, want [/%s]", cf.Config.Entrypoint, c.Binary)
	}
	for _, k := range []string{oci.LabelSource, oci.LabelRevision, oci.LabelVersion, oci.LabelTitle, oci.LabelLicenses, oci.LabelCreated, oci.LabelCASource} {
		if cf.Config.Labels[k] == "" {
			addf("label %s missing", k)
		}
	}
	if got := cf.Config.Labels[oci.LabelRevision]; got != want.Revision {
		addf("label %s = %q, want %q", oci.LabelRevision, got, want.Revision)
	}
	files, err := readFiles(img, []string{c.Binary, "etc/passwd", "etc/group", oci.CAFile})
	if err != nil {
		return nil, err
	}
	for _, e := range files.entries {
		if slices.Contains(forbidden, e) {
			addf("holds %s", e)
		}
		top, _, _ := strings.Cut(e, "/")
		if top != c.Binary && !slices.Contains(allowedTop, top) {
			addf("unexpected top-level entry /%s", e)
		}
	}
	if files.modes["tmp"] != 0o1777 {
		addf("/tmp mode = %o, want 1777", files.modes["tmp"])
	}
	if !bytes.Contains(files.data["etc/passwd"], []byte("nonroot:x:65532:65532:")) {
		addf("/etc/passwd has no nonroot user 65532")
	}
	if !bytes.Contains(files.data["etc/group"], []byte("nonroot:x:65532:")) {
		addf("/etc/group has no nonroot group 65532")
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(files.data[oci.CAFile]) || bytes.Count(files.data[oci.CAFile], []byte("BEGIN CERTIFICATE")) < 100 {
		addf("/%s: fewer than 100 CA certificates", oci.CAFile)
	}
	bin, ok := files.data[c.Binary]
	if !ok {
		addf("no /%s", c.Binary)
		return problems, nil
	}
	if files.modes[c.Binary]&0o111 == 0 {
		addf("/%s is not executable (mode %o)", c.Binary, files.modes[c.Binary])
	}
	if err := staticELF(bin, p.Architecture); err != nil {
		addf("/%s: %v", c.Binary, err)
	}
	if p.OS == runtime.GOOS && p.Architecture == runtime.GOARCH {
		if err := runHelp(bin, c); err != nil {
			addf("/%s --help: %v", c.Binary, err)
		}
		if c.StampsVersion {
			if err := runVersion(bin, c, cf.Config.Labels[oci.LabelVersion], want.Revision); err != nil {
				addf("/%s --version: %v", c.Binary, err)
			}
		}
	}
	return problems, nil
}

// numericNonRoot accepts "uid" or "uid:gid", both numeric and not 0.
func numericNonRoot(user string) error {
	for part := range strings.SplitSeq(user, ":") {
		n, err := strconv.Atoi(part)
		if err != nil {
			return fmt.Errorf("%q is not numeric", user)
		}
		if n == 0 {
			return fmt.Errorf("%q is root", user)
		}
	}
	return nil
}

// staticELF checks the binary is an ELF executable for goarch with no
// program interpreter: static, as the base has no libc.
func staticELF(bin []byte, goarch string) error {
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		return fmt.Errorf("not an ELF file: %w", err)
	}
	defer f.Close()
	if want, ok := machines[goarch]; !ok || f.Machine != want {
		return fmt.Errorf("ELF machine %s, want the one of %s", f.Machine, goarch)
	}
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return fmt.Errorf("dynamically linked (has PT_INTERP)")
		}
	}
	return nil
}

// layerFiles is the merged view of an image's layers.
type layerFiles struct {
	entries []string          // every path, cleaned, in layer order
	modes   map[string]int64  // path → mode bits
	data    map[string][]byte // contents of the files asked for
}

// readFiles walks every layer and keeps the contents of the named files.
func readFiles(img v1.Image, keep []string) (layerFiles, error) {
	out := layerFiles{modes: map[string]int64{}, data: map[string][]byte{}}
	layers, err := img.Layers()
	if err != nil {
		return out, err
	}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			return out, err
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				rc.Close()
				return out, err
			}
			name := strings.TrimPrefix(path.Clean("/"+h.Name), "/")
			out.entries = append(out.entries, name)
			out.modes[name] = h.Mode
			if slices.Contains(keep, name) {
				b, err := io.ReadAll(tr)
				if err != nil {
					rc.Close()
					return out, err
				}
				out.data[name] = b
			}
		}
		rc.Close()
	}
	return out, nil
}
