package main

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/crowsnest-dev/crowsnest/hack/tools/imagebuild/internal/imagecheck"
	"github.com/crowsnest-dev/crowsnest/hack/tools/imagebuild/internal/oci"
)

// The tests build real images with the Makefile's build targets for the
// host's platform only (the release build, make images, adds linux/arm64 and
// checks it with the same imagecheck.Check): Go's build cache makes them
// cheap after the service tests.

const testRevision = "0123456789abcdef0123456789abcdef01234567"

var testCreated = time.Unix(1763900000, 0).UTC()

// repoRoot is CROWSNEST_ROOT or the directory three levels up holding the Makefile.
func repoRoot(t *testing.T) string {
	t.Helper()
	root := os.Getenv("CROWSNEST_ROOT")
	if root == "" {
		root = filepath.Join("..", "..", "..")
	}
	root, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "Makefile")); err != nil {
		t.Fatalf("repository root %s: %v", root, err)
	}
	return root
}

func hostPlatform(t *testing.T) []v1.Platform {
	t.Helper()
	ps, err := oci.ParsePlatforms("linux/" + runtime.GOARCH)
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

func buildImage(t *testing.T, c oci.Component, out string, mod func(*oci.Options)) v1.Hash {
	t.Helper()
	o := oci.Options{
		Component: c, Root: repoRoot(t), Version: "v0.0.0-test", Revision: testRevision,
		Created: testCreated, Platforms: hostPlatform(t), Out: out,
	}
	if mod != nil {
		mod(&o)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	d, err := oci.Build(ctx, o)
	if err != nil {
		t.Fatalf("build %s: %v", c.Name, err)
	}
	t.Logf("built %s (%s) in %s: %s", c.Name, o.Platforms[0], time.Since(start).Round(100*time.Millisecond), d)
	return d
}

// shared holds the layouts built with the default options, one per component,
// so the tests build each image once; TestMain removes sharedDir.
var (
	sharedDir string
	shared    = map[string]sharedBuild{}
)

type sharedBuild struct {
	dir    string
	digest v1.Hash
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "imagebuild-test-")
	if err != nil {
		panic(err)
	}
	sharedDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// sharedImage builds the component with the default options once per test
// binary and returns its layout and digest. Callers must not modify it.
func sharedImage(t *testing.T, c oci.Component) (string, v1.Hash) {
	t.Helper()
	if b, ok := shared[c.Name]; ok {
		return b.dir, b.digest
	}
	dir := filepath.Join(sharedDir, c.Name)
	d := buildImage(t, c, dir, nil)
	shared[c.Name] = sharedBuild{dir: dir, digest: d}
	return dir, d
}

func component(t *testing.T, name string) oci.Component {
	t.Helper()
	c, err := oci.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestImages builds each component's image and checks its content: the
// platform, user 65532, no shell, the static binary for the architecture
// answering --help, the base files and the labels.
func TestImages(t *testing.T) {
	root := repoRoot(t)
	for _, name := range []string{"operator", "results-api", "uploader", "matcher", "notifier"} {
		t.Run(name, func(t *testing.T) {
			c := component(t, name)
			dir, _ := sharedImage(t, c)
			problems, err := imagecheck.Check(dir, imagecheck.Want{Component: c, Revision: testRevision, Platforms: hostPlatform(t)})
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range problems {
				t.Error(p)
			}
			if name == "results-api" {
				assertEmbedsUI(t, root, dir)
			}
			t.Logf("%s layout: %d KiB", name, dirSize(t, dir)/1024)
		})
	}
}

// assertEmbedsUI checks results-api's binary carries the web UI that
// make build-web put into its source tree.
func assertEmbedsUI(t *testing.T, root, dir string) {
	t.Helper()
	index, err := os.ReadFile(filepath.Join(root, "results-api/internal/ui/dist/index.html"))
	if err != nil {
		t.Fatal(err)
	}
	idx, _, err := oci.ReadLayout(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	img, err := idx.Image(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	rc, err := layers[len(layers)-1].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(rc); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(buf.Bytes(), bytes.TrimSpace(index)) {
		t.Error("the results-api binary does not embed web/dist's index.html")
	}
}

// TestReproducible builds the same image twice: the same inputs give the
// same digest; another revision gives another one.
func TestReproducible(t *testing.T) {
	c := component(t, "uploader")
	_, a := sharedImage(t, c)
	b := buildImage(t, c, filepath.Join(t.TempDir(), "again"), nil)
	if a != b {
		t.Fatalf("two builds of the same inputs: %s != %s", a, b)
	}
	other := buildImage(t, c, filepath.Join(t.TempDir(), "c"), func(o *oci.Options) { o.Revision = strings.Repeat("f", 40) })
	if other == a {
		t.Fatalf("another revision gave the same digest %s", a)
	}
}

// TestCheckCatches plays a bad image against the checks: a shell added, root
// user, a binary of the wrong architecture, a missing platform and label.
func TestCheckCatches(t *testing.T) {
	c := component(t, "uploader")
	dir, _ := sharedImage(t, c)
	good, version, err := oci.ReadLayout(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := good.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	img, err := good.Image(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	shell, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(tarOf(t, "bin/sh"))), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		t.Fatal(err)
	}
	bad, err := mutate.AppendLayers(img, shell)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := bad.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.Config.User = "0"
	delete(cf.Config.Labels, oci.LabelLicenses)
	if bad, err = mutate.ConfigFile(bad, cf); err != nil {
		t.Fatal(err)
	}
	// The same amd64-or-arm64 image claimed for the other architecture.
	other := v1.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}
	if runtime.GOARCH == "arm64" {
		other = v1.Platform{OS: "linux", Architecture: "amd64"}
	}
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex),
		mutate.IndexAddendum{Add: bad, Descriptor: v1.Descriptor{Platform: &other}})
	badDir := filepath.Join(t.TempDir(), "bad")
	if err := oci.WriteLayout(badDir, idx, version); err != nil {
		t.Fatal(err)
	}
	problems, err := imagecheck.Check(badDir, imagecheck.Want{Component: c, Revision: testRevision, Platforms: append(hostPlatform(t), other)})
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(problems, "\n")
	for _, want := range []string{"index platforms", "holds bin/sh", "unexpected top-level entry /bin", `"0" is root`, "ELF machine", "config platform", "label " + oci.LabelLicenses + " missing"} {
		if !strings.Contains(all, want) {
			t.Errorf("no problem mentions %q; got:\n%s", want, all)
		}
	}
}

// tarOf is an uncompressed tar holding one empty executable file.
func tarOf(t *testing.T, name string) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func dirSize(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			n += fi.Size()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
