package registry

import (
	"context"
	"fmt"
	"os"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// refNameAnnotation is the OCI layout's reference name of its one index
// (hack/tools/imagebuild writes the version there).
const refNameAnnotation = "org.opencontainers.image.ref.name"

// PauseImage is the node's Pod-sandbox image: a static program that waits
// for a signal (what registry.k8s.io/pause does), built here so the node
// pulls nothing from outside.
func PauseImage(binary string) (Built, error) { return ProgramImage("pause", "3.10", binary) }

// ProgramImage is an image holding one static program, /<name>, as its
// entrypoint (the pause program, the tests' network probe).
func ProgramImage(prog, tag, binary string) (Built, error) {
	bin, err := os.ReadFile(binary)
	if err != nil {
		return Built{}, fmt.Errorf("read %s binary: %w", prog, err)
	}
	l, err := layer(map[string]file{prog: {mode: 0o755, data: bin}})
	if err != nil {
		return Built{}, err
	}
	img, err := image([]string{"/" + prog}, l)
	if err != nil {
		return Built{}, err
	}
	return Built{Name: prog, Tag: tag, Image: img}, nil
}

// RunnableAlpine is the Alpine demo image (its packages, so its findings)
// with one static program, /<prog>, as its entrypoint: a workload a real
// node runs (the demo images' /bin/busybox is a placeholder). variant makes
// its own digest.
func RunnableAlpine(variant, prog, binary string) (Built, error) {
	bin, err := os.ReadFile(binary)
	if err != nil {
		return Built{}, fmt.Errorf("read %s binary: %w", prog, err)
	}
	files := alpineFiles(variant)
	files[prog] = file{mode: 0o755, data: bin}
	l, err := layer(files)
	if err != nil {
		return Built{}, err
	}
	img, err := image([]string{"/" + prog}, l)
	if err != nil {
		return Built{}, err
	}
	return Built{Name: "alpine-" + variant, Tag: "3.18", Image: img}, nil
}

// PushPlatform pushes a platform image (the pause image) to
// <host>/crowsnest/<name>:<tag> and returns that reference.
func (r *Registry) PushPlatform(ctx context.Context, b Built) (string, error) {
	ref := r.Host + "/crowsnest/" + b.Name + ":" + b.Tag
	parsed, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		return "", err
	}
	if err := remote.Write(parsed, b.Image, remote.WithContext(ctx)); err != nil {
		return "", fmt.Errorf("push %s: %w", ref, err)
	}
	return ref, nil
}

// PushLayout pushes the image index of an OCI image layout written by make
// images (dist/images/<name>) to <host>/crowsnest/<repo>:<its version> and
// returns that reference: the project's own images, pulled by the node as
// a cluster's nodes pull them.
func (r *Registry) PushLayout(ctx context.Context, dir, repo string) (string, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return "", fmt.Errorf("read image layout %s (run make images): %w", dir, err)
	}
	top, err := p.ImageIndex()
	if err != nil {
		return "", err
	}
	m, err := top.IndexManifest()
	if err != nil {
		return "", err
	}
	if len(m.Manifests) != 1 || !m.Manifests[0].MediaType.IsIndex() {
		return "", fmt.Errorf("image layout %s: want one image index in index.json, have %d entries", dir, len(m.Manifests))
	}
	d := m.Manifests[0]
	idx, err := top.ImageIndex(d.Digest)
	if err != nil {
		return "", err
	}
	tag := d.Annotations[refNameAnnotation]
	if tag == "" {
		tag = "dev"
	}
	ref := r.Host + "/crowsnest/" + repo + ":" + tag
	parsed, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		return "", err
	}
	if err := remote.WriteIndex(parsed, idx, remote.WithContext(ctx)); err != nil {
		return "", fmt.Errorf("push %s: %w", ref, err)
	}
	return ref, nil
}
