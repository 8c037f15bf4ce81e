package oci

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// OCI annotation and label keys set on every image.
const (
	LabelSource   = "org.opencontainers.image.source"
	LabelRevision = "org.opencontainers.image.revision"
	LabelVersion  = "org.opencontainers.image.version"
	LabelTitle    = "org.opencontainers.image.title"
	LabelLicenses = "org.opencontainers.image.licenses"
	LabelCreated  = "org.opencontainers.image.created"
	// RefName annotates the index in the layout's index.json with the version.
	RefName = "org.opencontainers.image.ref.name"
)

// Options say what to build.
type Options struct {
	Component Component
	// Root is the repository root (where the Makefile is).
	Root string
	// Version and Revision are stamped into the binaries (make's VERSION and
	// REVISION) and the labels.
	Version, Revision string
	// Created is the image's creation time and every file's modification
	// time (SOURCE_DATE_EPOCH or the commit time): same inputs, same digest.
	Created time.Time
	// Platforms are the images of the index, e.g. linux/amd64, linux/arm64.
	Platforms []v1.Platform
	// Out is the OCI layout directory written (replaced when it exists).
	Out string
	// Log receives make's output; nil discards it.
	Log *os.File
}

// Build compiles the component for every platform with make and writes the
// OCI image layout Out holding one image index.
func Build(ctx context.Context, o Options) (v1.Hash, error) {
	if o.Version == "" || o.Revision == "" {
		return v1.Hash{}, fmt.Errorf("%s: version and revision are required", o.Component.Name)
	}
	if len(o.Platforms) == 0 {
		return v1.Hash{}, fmt.Errorf("%s: no platforms", o.Component.Name)
	}
	for _, f := range o.Component.Embeds {
		if _, err := os.Stat(filepath.Join(o.Root, f)); err != nil {
			return v1.Hash{}, fmt.Errorf("%s embeds %s (make build-web): %w", o.Component.Name, f, err)
		}
	}
	tmp, err := os.MkdirTemp("", "imagebuild-")
	if err != nil {
		return v1.Hash{}, err
	}
	defer os.RemoveAll(tmp)
	bins := make([][]byte, 0, len(o.Platforms))
	for _, p := range o.Platforms {
		bin, err := compile(ctx, o, p, filepath.Join(tmp, p.OS+"-"+p.Architecture))
		if err != nil {
			return v1.Hash{}, err
		}
		bins = append(bins, bin)
	}
	idx, err := Assemble(o, bins)
	if err != nil {
		return v1.Hash{}, err
	}
	if err := WriteLayout(o.Out, idx, o.Version); err != nil {
		return v1.Hash{}, err
	}
	return idx.Digest()
}

// Assemble builds the image index from one binary per platform (bins[i] for
// o.Platforms[i]); nothing is read from the machine but the arguments.
func Assemble(o Options, bins [][]byte) (v1.ImageIndex, error) {
	if len(bins) != len(o.Platforms) {
		return nil, fmt.Errorf("%d binaries for %d platforms", len(bins), len(o.Platforms))
	}
	created := o.Created.UTC().Truncate(time.Second)
	base, err := baseLayer(created)
	if err != nil {
		return nil, fmt.Errorf("base layer: %w", err)
	}
	adds := make([]mutate.IndexAddendum, 0, len(bins))
	for i, p := range o.Platforms {
		img, err := image(o, p, base, bins[i], created)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", o.Component.Name, p, err)
		}
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &o.Platforms[i]}})
	}
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), adds...)
	ann, ok := mutate.Annotations(idx, labels(o, created)).(v1.ImageIndex)
	if !ok {
		return nil, fmt.Errorf("annotate index")
	}
	return ann, nil
}

// compile runs `make build-<name> BIN=dir` for one platform and returns the
// binary. make's recipes see GOOS and GOARCH in their environment.
func compile(ctx context.Context, o Options, p v1.Platform, dir string) ([]byte, error) {
	c := o.Component
	cmd := exec.CommandContext(ctx, "make", "--no-print-directory", "-C", o.Root, "build-"+c.Name,
		"BIN="+dir, "VERSION="+o.Version, "REVISION="+o.Revision)
	cmd.Env = append(os.Environ(), "GOOS="+p.OS, "GOARCH="+p.Architecture, "CGO_ENABLED=0", "SOURCE_DATE_EPOCH="+strconv.FormatInt(o.Created.Unix(), 10))
	if p.Architecture == "arm" && p.Variant != "" {
		cmd.Env = append(cmd.Env, "GOARM="+strings.TrimPrefix(p.Variant, "v"))
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if o.Log != nil {
		cmd.Stdout, cmd.Stderr = o.Log, o.Log
	}
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("make build-%s for %s: %w\n%s", c.Name, p, err, out.Bytes())
	}
	if o.Log != nil {
		fmt.Fprintf(o.Log, "imagebuild: built %s for %s in %s\n", c.Binary, p, time.Since(start).Round(100*time.Millisecond))
	}
	return os.ReadFile(filepath.Join(dir, c.Binary))
}

// labels are the image's OCI labels (and the index's annotations).
func labels(o Options, created time.Time) map[string]string {
	return map[string]string{
		LabelSource:   Source,
		LabelRevision: o.Revision,
		LabelVersion:  o.Version,
		LabelTitle:    o.Component.Title,
		LabelLicenses: o.Component.Licenses,
		LabelCreated:  created.Format(time.RFC3339),
		LabelCASource: CASource(),
	}
}

// image is one platform's image: base layer, binary layer, config.
func image(o Options, p v1.Platform, base v1.Layer, bin []byte, created time.Time) (v1.Image, error) {
	c := o.Component
	binLayer, err := binaryLayer(c.Binary, bin, created)
	if err != nil {
		return nil, err
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: base, MediaType: types.OCILayer, History: v1.History{
			Created: v1.Time{Time: created}, CreatedBy: "imagebuild: base (passwd, group, nsswitch.conf, /tmp, CA certificates from " + CASource() + ")",
		}},
		mutate.Addendum{Layer: binLayer, MediaType: types.OCILayer, History: v1.History{
			Created: v1.Time{Time: created}, CreatedBy: "imagebuild: make build-" + c.Name + " → /" + c.Binary,
		}},
	)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
	cf.Created = v1.Time{Time: created}
	cf.Config = v1.Config{
		User:       User,
		Entrypoint: []string{"/" + c.Binary},
		WorkingDir: "/",
		Env: []string{
			"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
			"SSL_CERT_FILE=/" + CAFile,
		},
		Labels: labels(o, created),
	}
	if len(c.Ports) > 0 {
		cf.Config.ExposedPorts = map[string]struct{}{}
		for _, port := range c.Ports {
			cf.Config.ExposedPorts[port] = struct{}{}
		}
	}
	return mutate.ConfigFile(img, cf)
}

// ParsePlatforms parses "linux/amd64,linux/arm64" (arm64 gets variant v8,
// as registries and runtimes expect).
func ParsePlatforms(s string) ([]v1.Platform, error) {
	var out []v1.Platform
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		p, err := v1.ParsePlatform(f)
		if err != nil {
			return nil, err
		}
		if p.OS != "linux" {
			return nil, fmt.Errorf("platform %s: only linux images", f)
		}
		if p.Architecture == "arm64" && p.Variant == "" {
			p.Variant = "v8"
		}
		out = append(out, *p)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no platforms in %q", s)
	}
	return out, nil
}
