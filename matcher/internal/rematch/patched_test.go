package rematch

import (
	"os"
	"runtime/debug"
	"testing"

	"github.com/anchore/grype/grype/match"
	"github.com/anchore/grype/grype/pkg"
	"github.com/anchore/grype/grype/version"
)

// TestBuiltWithThePatches checks that make's builds of the matcher compile
// Grype as matcher/third_party/patches changes it: work the patches skip or
// keep costs (almost) no allocation (3 and 1 here, against 340 and 42
// upstream). make sets CROWSNEST_GRYPE_PATCHES; a plain go test
// (GOWORK=off) builds upstream's code, whose output the patches leave
// unchanged, and is not checked.
func TestBuiltWithThePatches(t *testing.T) {
	if os.Getenv("CROWSNEST_GRYPE_PATCHES") == "" {
		t.Skip("CROWSNEST_GRYPE_PATCHES is not set (make test-matcher sets it): not checking which Grype this build compiled")
	}
	none := match.NewMatches()
	if n := testing.AllocsPerRun(20, func() { _, _ = match.ApplyExplicitIgnoreRules(nil, none) }); n > 10 {
		t.Errorf("filtering no match allocates %.0f times: Grype's match package is not the patched copy (make matcher-patched; GOWORK=dist/patched/matcher.work)", n)
	}
	if _, err := version.GetConstraint(">= 1.0, < 2.0 || >= 3.0", version.SemanticFormat); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(20, func() { _, _ = version.GetConstraint(">= 1.0, < 2.0 || >= 3.0", version.SemanticFormat) }); n > 1 {
		t.Errorf("parsing a constraint again allocates %.0f times: Grype's version package is not the patched copy", n)
	}
	part := sbomPart(fixtureBOM(t, "alpine"))
	r := countingSBOMReader{sbomReader: newSBOMReader(part)}
	if _, _, _, err := pkg.ProvideFromReader(&r, pkg.ProviderConfig{}); err != nil {
		t.Fatal(err)
	}
	// CycloneDX JSON's decoder identifies and decodes: two passes; upstream's
	// format.Decode asks two other decoders first, a pass each, and
	// CycloneDX JSON's own identification once more.
	if r.read > 2*len(part) {
		t.Errorf("decoding a stored report's SBOM read it %.1f times: Grype's pkg package is not the patched copy", float64(r.read)/float64(len(part)))
	}
}

// countingSBOMReader counts what Grype's provider reads of an sbomReader.
type countingSBOMReader struct {
	sbomReader
	read int
}

func (c *countingSBOMReader) Read(b []byte) (int, error) {
	n, err := c.sbomReader.Read(b)
	c.read += n
	return n, err
}

// A binary built against the patched copy (a replacement by a folder, no
// version of its own) names the Grype version it patches in its reports.
func TestGrypeVersionOfAPatchedBuild(t *testing.T) {
	for _, c := range []struct {
		name string
		dep  *debug.Module
		want string
	}{
		{"upstream", &debug.Module{Path: grypeModule, Version: "v0.121.2"}, "0.121.2"},
		{"patched copy", &debug.Module{Path: grypeModule, Version: "v0.121.2", Replace: &debug.Module{Path: "/x/dist/patched/github.com/anchore/grype@v0.121.2", Version: "(devel)"}}, "0.121.2"},
		{"patched copy, no version", &debug.Module{Path: grypeModule, Version: "v0.121.2", Replace: &debug.Module{Path: "/x/dist/patched/github.com/anchore/grype@v0.121.2"}}, "0.121.2"},
		{"another version", &debug.Module{Path: grypeModule, Version: "v0.121.2", Replace: &debug.Module{Path: grypeModule, Version: "v0.122.0"}}, "0.122.0"},
	} {
		if got := grypeVersionIn(&debug.BuildInfo{Deps: []*debug.Module{c.dep}}); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	if got := grypeVersionIn(nil); got != grypeVersion {
		t.Errorf("no build information: %q, want %q", got, grypeVersion)
	}
}
