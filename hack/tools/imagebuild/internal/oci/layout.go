package oci

import (
	"fmt"
	"os"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// WriteLayout replaces dir with an OCI image layout whose index.json names
// one entry: idx, annotated with the version as its reference name (what
// `crane`/`skopeo` call oci:dir:version).
func WriteLayout(dir string, idx v1.ImageIndex, version string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("write layout %s: %w", dir, err)
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{RefName: version})); err != nil {
		return fmt.Errorf("write layout %s: %w", dir, err)
	}
	return nil
}

// ReadLayout returns the one image index of an OCI image layout written by
// WriteLayout, with its reference name.
func ReadLayout(dir string) (v1.ImageIndex, string, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, "", fmt.Errorf("read layout %s: %w", dir, err)
	}
	top, err := p.ImageIndex()
	if err != nil {
		return nil, "", err
	}
	m, err := top.IndexManifest()
	if err != nil {
		return nil, "", err
	}
	if len(m.Manifests) != 1 {
		return nil, "", fmt.Errorf("layout %s: index.json has %d entries, want 1", dir, len(m.Manifests))
	}
	d := m.Manifests[0]
	if !d.MediaType.IsIndex() {
		return nil, "", fmt.Errorf("layout %s: %s is a %s, want an image index", dir, d.Digest, d.MediaType)
	}
	idx, err := top.ImageIndex(d.Digest)
	if err != nil {
		return nil, "", err
	}
	return idx, d.Annotations[RefName], nil
}
