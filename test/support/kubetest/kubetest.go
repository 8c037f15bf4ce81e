// Package kubetest starts a real kube-apiserver and etcd for tests through
// controller-runtime's envtest, using the binaries that `hack/tools.sh kube
// etcd` builds from the Go module proxy (linked into bin/k8s).
package kubetest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/crowsnest-dev/crowsnest/test/support"
)

// AssetsDir returns the folder holding kube-apiserver and etcd:
// $KUBEBUILDER_ASSETS when set, otherwise <repo>/bin/k8s.
func AssetsDir() (string, error) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir, nil
	}
	root, err := support.RepoRoot()
	if err != nil {
		return "", fmt.Errorf("locate control-plane binaries: %w", err)
	}
	dir := filepath.Join(root, "bin", "k8s")
	for _, name := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return "", fmt.Errorf("%s not found in %s (run `make kube-assets`): %w", name, dir, err)
		}
	}
	return dir, nil
}

// Option adjusts the envtest environment before it starts.
type Option func(*envtest.Environment)

// WithCRDs installs the CustomResourceDefinitions found in the given paths.
func WithCRDs(paths ...string) Option {
	return func(e *envtest.Environment) {
		e.CRDDirectoryPaths = append(e.CRDDirectoryPaths, paths...)
		e.ErrorIfCRDPathMissing = true
	}
}

// Start runs a control plane for the whole test binary. Call it from TestMain
// and defer the returned stop function; it fails loudly rather than skipping,
// because a test suite that silently skips its API server proves nothing.
func Start(opts ...Option) (*rest.Config, func() error, error) {
	dir, err := AssetsDir()
	if err != nil {
		return nil, nil, err
	}
	env := &envtest.Environment{BinaryAssetsDirectory: dir}
	for _, opt := range opts {
		opt(env)
	}
	removeAssets, err := DieWithParent(env, dir, "")
	if err != nil {
		return nil, nil, err
	}
	cfg, err := env.Start()
	if err != nil {
		removeAssets()
		return nil, nil, fmt.Errorf("start envtest control plane from %s: %w", dir, err)
	}
	return cfg, func() error {
		defer removeAssets()
		return env.Stop()
	}, nil
}

// StartT starts a control plane for one test and stops it when the test ends.
func StartT(t testing.TB, opts ...Option) *rest.Config {
	t.Helper()
	cfg, stop, err := Start(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := stop(); err != nil && !errors.Is(err, os.ErrProcessDone) {
			t.Errorf("stop control plane: %v", err)
		}
	})
	return cfg
}
