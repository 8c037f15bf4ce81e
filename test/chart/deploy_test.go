package charttest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestDeployManifests: the kind, dev and sample manifests in deploy/ are
// accepted by the real API server (server-side dry-run, strict fields), the
// sample Scanner included, and the sample workloads use pinned images.
func TestDeployManifests(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	applier, err := NewApplier(apiCfg)
	if err != nil {
		t.Fatal(err)
	}
	files := []string{"deploy/dev/namespace.yaml", "deploy/samples/demo.yaml", "deploy/samples/scanner.yaml", "deploy/samples/exceptions.yaml", "deploy/kind/local-registry-hosting.yaml"}
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(repoRoot, f))
		if err != nil {
			t.Fatal(err)
		}
		objs, err := Decode(data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		// Namespaces for real first, so the namespaced objects can be dry-run.
		for _, o := range objs {
			if o.GetKind() == "Namespace" {
				if err := applier.Apply(ctx, o); err != nil {
					t.Fatalf("%s: %v", f, err)
				}
			}
		}
		for _, o := range objs {
			if err := applier.DryRunApply(ctx, o); err != nil {
				t.Errorf("%s: %v", f, err)
			}
		}
		pods, err := PodTemplates(objs)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range CheckImages(pods) {
			t.Errorf("%s: %s", f, p)
		}
	}
}
