package image

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Epoch is the modification time of every file and the image creation time.
var Epoch = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// File is one regular file of an image's root filesystem.
type File struct {
	Path string // relative, slash-separated, e.g. "etc/os-release"
	Mode int64  // 0 means 0o644
	Data []byte
}

// Spec describes one image.
type Spec struct {
	Name  string // short name: alpine, debian, gobinary, node, clean, large
	Files []File
	Cmd   []string
}

// Build returns the image for s: one layer holding s.Files.
func Build(s Spec) (v1.Image, error) {
	layerTar, err := tarFiles(s.Files)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", s.Name, err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("image %s layer: %w", s.Name, err)
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{Layer: layer, History: v1.History{
		Created: v1.Time{Time: Epoch}, CreatedBy: "crowsnest fixtures: " + s.Name,
	}})
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.Architecture, cfg.OS, cfg.Created = "amd64", "linux", v1.Time{Time: Epoch}
	cfg.Config.Cmd = s.Cmd
	cfg.Config.Labels = map[string]string{"org.opencontainers.image.title": "crowsnest-demo-" + s.Name}
	return mutate.ConfigFile(img, cfg)
}

// WriteLayout writes img as an OCI image layout in dir, tagged with ref.
func WriteLayout(dir, ref string, img v1.Image) (v1.Hash, error) {
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return v1.Hash{}, err
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": ref,
	})); err != nil {
		return v1.Hash{}, err
	}
	return img.Digest()
}

// tarFiles writes files (and their parent directories) as a tar stream in a
// stable order with fixed metadata.
func tarFiles(files []File) ([]byte, error) {
	sorted := append([]File(nil), files...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Path < sorted[j].Path })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	for _, f := range sorted {
		var parents []string
		for d := path.Dir(f.Path); d != "." && d != "/" && !dirs[d]; d = path.Dir(d) {
			parents = append(parents, d)
			dirs[d] = true
		}
		for i := len(parents) - 1; i >= 0; i-- {
			if err := tw.WriteHeader(header(parents[i]+"/", tar.TypeDir, 0o755, 0)); err != nil {
				return nil, err
			}
		}
		mode := f.Mode
		if mode == 0 {
			mode = 0o644
		}
		if err := tw.WriteHeader(header(strings.TrimPrefix(f.Path, "/"), tar.TypeReg, mode, int64(len(f.Data)))); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.Data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func header(name string, typ byte, mode, size int64) *tar.Header {
	return &tar.Header{
		Name: name, Typeflag: typ, Mode: mode, Size: size,
		ModTime: Epoch, Uname: "root", Gname: "root", Format: tar.FormatPAX,
	}
}
