package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestKrewManifest checks krew/crowsnest.yaml against the rules of krew's
// validator (sigs.k8s.io/krew's validate-krew-manifest, which the module
// proxy does not serve here): the name matches the file, a semver version,
// https URIs that carry that version, one platform per os/arch the release
// builds, a well-formed sha256 each and the plugin's binary name; and
// krew-index's guideline of a short description within 50 characters.
func TestKrewManifest(t *testing.T) {
	b, err := os.ReadFile("krew/crowsnest.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Spec struct {
			Version          string `json:"version"`
			Homepage         string `json:"homepage"`
			ShortDescription string `json:"shortDescription"`
			Description      string `json:"description"`
			Platforms        []struct {
				Selector struct {
					MatchLabels map[string]string `json:"matchLabels"`
				} `json:"selector"`
				URI    string `json:"uri"`
				SHA256 string `json:"sha256"`
				Bin    string `json:"bin"`
			} `json:"platforms"`
		} `json:"spec"`
	}
	if err := yaml.UnmarshalStrict(b, &m); err != nil {
		t.Fatalf("krew/crowsnest.yaml: %v", err)
	}
	if m.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || m.Kind != "Plugin" || m.Metadata.Name != "crowsnest" {
		t.Fatalf("header: %s %s %s", m.APIVersion, m.Kind, m.Metadata.Name)
	}
	if !regexp.MustCompile(`^v\d+\.\d+\.\d+$`).MatchString(m.Spec.Version) || m.Spec.ShortDescription == "" || len(m.Spec.ShortDescription) > 50 || m.Spec.Description == "" {
		t.Fatalf("version %q, short description %q", m.Spec.Version, m.Spec.ShortDescription)
	}
	want := map[string]bool{"linux/amd64": true, "linux/arm64": true, "darwin/amd64": true, "darwin/arm64": true}
	sha := regexp.MustCompile(`^[0-9a-f]{64}$`)
	for _, p := range m.Spec.Platforms {
		key := p.Selector.MatchLabels["os"] + "/" + p.Selector.MatchLabels["arch"]
		if !want[key] {
			t.Errorf("unexpected or repeated platform %q", key)
		}
		delete(want, key)
		suffix := "/" + m.Spec.Version + "/kubectl-crowsnest_" + strings.ReplaceAll(key, "/", "_") + ".tar.gz"
		if !strings.HasPrefix(p.URI, "https://") || !strings.HasSuffix(p.URI, suffix) {
			t.Errorf("%s: uri %s, want https ending in %s", key, p.URI, suffix)
		}
		if !sha.MatchString(p.SHA256) || p.Bin != "kubectl-crowsnest" {
			t.Errorf("%s: sha256 %q bin %q", key, p.SHA256, p.Bin)
		}
	}
	if len(want) != 0 {
		t.Errorf("platforms missing: %v", want)
	}
}
