package registry

import (
	"context"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// The demo images are reproducible (same digest every run) and served by
// the loopback registry under their digests; the unpushed one is not.
func TestDemoImagesReproducibleAndServed(t *testing.T) {
	a, err := DemoImages("")
	if err != nil {
		t.Fatal(err)
	}
	b, err := DemoImages("")
	if err != nil {
		t.Fatal(err)
	}
	for i := range a {
		da, _ := a[i].Image.Digest()
		db, _ := b[i].Image.Digest()
		if da != db {
			t.Errorf("%s: digest changed between builds: %s vs %s", a[i].Name, da, db)
		}
	}
	ctx := context.Background()
	r, err := Start(ctx, "127.0.0.1:0", a, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, img := range r.Images {
		ref, err := name.ParseReference(img.ImageID(), name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		_, err = remote.Get(ref, remote.WithContext(ctx))
		if img.Pushed && err != nil {
			t.Errorf("%s: pull by digest: %v", img.Name, err)
		}
		if !img.Pushed && err == nil {
			t.Errorf("%s: must not be pullable", img.Name)
		}
		if id, ok := r.ResolveID(img.Ref()); !ok || id != img.ImageID() {
			t.Errorf("ResolveID(%s) = %q, %v", img.Ref(), id, ok)
		}
	}
}
