package image

import (
	"archive/tar"
	"io"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// TestBuildIsReproducible: the same spec gives the same digest, so fixture
// and demo image digests only change when their contents do.
func TestBuildIsReproducible(t *testing.T) {
	digest := func() string {
		img, err := Build(Debian())
		if err != nil {
			t.Fatal(err)
		}
		h, err := WriteLayout(t.TempDir(), "crowsnest.dev/demo/debian:test", img)
		if err != nil {
			t.Fatal(err)
		}
		return h.String()
	}
	if a, b := digest(), digest(); a != b {
		t.Fatalf("digests differ: %s vs %s", a, b)
	}
}

// TestLayoutHoldsPackageDatabase reads the written layout back and finds the
// apk database in the image's only layer.
func TestLayoutHoldsPackageDatabase(t *testing.T) {
	dir := t.TempDir()
	img, err := Build(Alpine())
	if err != nil {
		t.Fatal(err)
	}
	want, err := WriteLayout(dir, "crowsnest.dev/demo/alpine:test", img)
	if err != nil {
		t.Fatal(err)
	}
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	back, err := p.Image(want)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := back.ConfigFile()
	if err != nil || cfg.OS != "linux" || cfg.Architecture != "amd64" || !cfg.Created.Equal(Epoch) {
		t.Fatalf("config %+v err %v", cfg, err)
	}
	layers, err := back.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("%d layers, err %v", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("no lib/apk/db/installed in the layer (%v)", err)
		}
		if h.Name != "lib/apk/db/installed" {
			continue
		}
		db, _ := io.ReadAll(tr)
		if !strings.Contains(string(db), "P:busybox\nV:1.36.1-r2\n") || !h.ModTime.Equal(Epoch) {
			t.Fatalf("apk db %q mtime %v", db, h.ModTime)
		}
		return
	}
}
