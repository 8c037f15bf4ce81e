package oci

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// entry is one file or directory of a layer.
type entry struct {
	name     string // relative, no leading slash; directories end in "/"
	mode     int64
	uid, gid int
	data     []byte
}

// tarLayer writes entries, in order, as a reproducible layer: fixed owner,
// mode and modification time (the image's creation time), USTAR headers,
// nothing taken from the building machine.
func tarLayer(entries []entry, mtime time.Time) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{
			Name:    e.name,
			Mode:    e.mode,
			Uid:     e.uid,
			Gid:     e.gid,
			ModTime: mtime,
			Format:  tar.FormatUSTAR,
		}
		if e.name[len(e.name)-1] == '/' {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("tar header %s: %w", e.name, err)
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, fmt.Errorf("tar %s: %w", e.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(b)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
}

// binaryLayer is the layer holding the component's binary at /<name>.
func binaryLayer(name string, data []byte, mtime time.Time) (v1.Layer, error) {
	return tarLayer([]entry{{name: name, mode: 0o755, data: data}}, mtime)
}
