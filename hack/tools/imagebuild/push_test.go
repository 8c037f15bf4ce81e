package main

import (
	"context"
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// TestPush pushes a built layout to go-containerregistry's in-memory
// registry (standing in for ghcr.io, which is out of reach here) as
// make images-push does, and reads the same index back by tag.
func TestPush(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")

	c := component(t, "uploader")
	dir, want := sharedImage(t, c)
	repo := host + "/crowsnest-dev/crowsnest-uploader"
	if err := run(context.Background(), []string{"push", "-insecure", "-layout", dir, "-repo", repo}); err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(repo+":v0.0.0-test", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := remote.Index(ref)
	if err != nil {
		t.Fatal(err)
	}
	got, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("pushed index %s, built %s", got, want)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range m.Manifests {
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := img.ConfigFile(); err != nil {
			t.Fatalf("%s: %v", d.Platform, err)
		}
		layers, err := img.Layers()
		if err != nil || len(layers) != 2 {
			t.Fatalf("%s: %d layers, %v", d.Platform, len(layers), err)
		}
	}
}
