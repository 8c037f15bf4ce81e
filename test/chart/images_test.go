package charttest

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// TestImageRegistry: global.imageRegistry moves every image the release
// runs or hands to scan Jobs (Crowsnest's, Grype, NATS, Postgres, the
// helm test's) to <registry>/<last path segment>, keeping tags; without it
// no image points there.
func TestImageRegistry(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const mirror = "registry.example.com:5000/mirror"
	refs := func(args ...string) []string {
		objs, err := Template(ctx, repoRoot, releaseNS, append([]string{"-f", "test/chart/testdata/values-notifier.yaml"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		pods, err := PodTemplates(objs)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range pods {
			for _, c := range append(append([]corev1.Container{}, p.Spec.InitContainers...), p.Spec.Containers...) {
				out = append(out, c.Image)
				for _, e := range c.Env {
					if strings.HasSuffix(e.Name, "_IMAGE") {
						out = append(out, e.Value)
					}
				}
			}
		}
		return out
	}
	moved := refs("--set", "global.imageRegistry="+mirror)
	want := map[string]bool{"crowsnest-operator:": false, "crowsnest-results-api:": false, "crowsnest-uploader:": false,
		"crowsnest-grype:": false, "crowsnest-matcher:": false, "crowsnest-notifier:": false, "crowsnest-nats:": false, "postgres:": false}
	for _, ref := range moved {
		rest, ok := strings.CutPrefix(ref, mirror+"/")
		if !ok || strings.Contains(rest, "/") || imagePinned(ref) != "" {
			t.Errorf("image %q: want %s/<name>:<tag>", ref, mirror)
			continue
		}
		for k := range want {
			if strings.HasPrefix(rest, k) {
				want[k] = true
			}
		}
	}
	for k, seen := range want {
		if !seen {
			t.Errorf("no image %s… under the mirror in %q", k, moved)
		}
	}
	for _, ref := range refs() {
		if strings.HasPrefix(ref, mirror) {
			t.Errorf("without global.imageRegistry, %q points at the mirror", ref)
		}
	}
}
