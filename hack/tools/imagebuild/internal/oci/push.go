package oci

import (
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Push writes the image index (every platform's image and blob) to ref and
// returns its digest. Credentials come from the default keychain: the docker
// config.json (docker login, credential helpers) as registries' clients use it.
func Push(ctx context.Context, idx v1.ImageIndex, ref name.Reference) (v1.Hash, error) {
	if err := remote.WriteIndex(ref, idx, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return v1.Hash{}, fmt.Errorf("push %s: %w", ref, err)
	}
	return idx.Digest()
}
