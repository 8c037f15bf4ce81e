package rematch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/anchore/grype/grype/distro"
	"github.com/anchore/grype/grype/match"
	"github.com/anchore/grype/grype/pkg"
	"github.com/anchore/syft/syft/artifact"
	"github.com/anchore/syft/syft/cpe"
	"github.com/anchore/syft/syft/file"
	syftPkg "github.com/anchore/syft/syft/pkg"

	"github.com/crowsnest-dev/crowsnest/matcher/dbwrite/advisory"
)

// cacheInputs are the SBOMs the cache and memo tests match: every real
// fixture (the alpine and clean images share packages), a few fleet
// reports, which share most packages under other package ids and
// locations, and fleet reports whose base shares the names at other
// versions — below, inside and above the benchmark DB's affected ranges,
// so that an answer kept for one version and reused for another would
// show.
func cacheInputs(t *testing.T) map[string][]byte {
	t.Helper()
	in := map[string][]byte{}
	for _, f := range fixtures(t) {
		if !f.Synthetic { // the large fixture would only make the test slow
			in[f.Name] = fixtureBOM(t, f.Name)
		}
	}
	for i := range 3 {
		in[fmt.Sprintf("fleet-%d", i)] = fleetSBOM(t, i, 40, 0.8)
	}
	for i, v := range []string{"0.0.0-r1", "1.0.0-r3", "2.0.0-r0"} {
		in[fmt.Sprintf("fleet-at-%s", v)] = fleetSBOMAt(t, 10+i, 40, 0.8, v)
	}
	return in
}

// TestMatchCacheBounded gives the cache room for a few answers only: it
// evicts, stays within its bound, and the outputs stay the same.
func TestMatchCacheBounded(t *testing.T) {
	dir := writeDB(t, append(advisory.All(0), benchAdvisories(3000)...), fixtureBuilt)
	plain, err := Open(dir, Options{CacheBytes: -1, MemoBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = plain.Close() })
	const bound = 64 << 10
	small, err := Open(dir, Options{CacheBytes: bound, MemoBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = small.Close() })
	in := cacheInputs(t)
	checkSameOutput(t, plain, small, in, 2)
	st := small.CacheStats()
	t.Logf("cache stats %+v, bound %d", st, bound)
	if st.Bytes > bound || st.Entries == 0 || st.Hits == 0 {
		t.Fatalf("cache stats %+v, bound %d", st, bound)
	}
}

// TestMatchCacheConcurrent shares one cache and one DB memo between
// concurrent matches (run with -race): every output equals the one without
// either.
func TestMatchCacheConcurrent(t *testing.T) {
	dir := writeDB(t, append(advisory.All(0), benchAdvisories(3000)...), fixtureBuilt)
	plain, err := Open(dir, Options{CacheBytes: -1, MemoBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = plain.Close() })
	cached, err := Open(dir, Options{MaxConcurrent: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cached.Close() })
	in := cacheInputs(t)
	want := map[string][]byte{}
	for name, bom := range in {
		out, _, err := plain.Match(context.Background(), bom)
		if err != nil {
			t.Fatal(err)
		}
		want[name] = normalize(t, out, true)
	}
	errs := make(chan error, 3*len(in))
	for range 3 {
		for name, bom := range in {
			go func() {
				out, _, err := cached.Match(context.Background(), bom)
				if err == nil && !bytes.Equal(normalize(t, out, true), want[name]) {
					err = errors.New(name + ": output differs with the cache under concurrency")
				}
				errs <- err
			}()
		}
	}
	for range 3 * len(in) {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

func checkSameOutput(t *testing.T, plain, cached *Matcher, in map[string][]byte, rounds int) {
	t.Helper()
	// In the names' order, not the map's: what a bounded cache still holds
	// when a report comes depends on the reports before it (the three
	// fleet reports, sharing most packages, follow each other), so its
	// hits are the same in every run.
	for _, name := range slices.Sorted(maps.Keys(in)) {
		bom := in[name]
		want, wantFindings, err := plain.Match(context.Background(), bom)
		if err != nil {
			t.Fatal(err)
		}
		for round := range rounds {
			got, findings, err := cached.Match(context.Background(), bom)
			if err != nil {
				t.Fatal(err)
			}
			if !SameFindings(findings, wantFindings) || len(findings) != len(wantFindings) {
				added, resolved := Diff(wantFindings, findings)
				t.Fatalf("%s round %d: findings differ with the cache: new %v, resolved %v", name, round, added, resolved)
			}
			if !bytes.Equal(normalize(t, got, true), normalize(t, want, true)) {
				t.Fatalf("%s round %d: output differs with the cache", name, round)
			}
		}
	}
}

func TestKeyOf(t *testing.T) {
	d := distro.New(distro.Alpine, "3.18.4", "")
	base := func() pkg.Package {
		return pkg.Package{
			ID: "a", Name: "musl", Version: "1.2.4-r1", Type: syftPkg.ApkPkg, Distro: d,
			Locations: file.NewLocationSet(file.NewLocation("/lib/apk/db/installed")),
			CPEs:      []cpe.CPE{cpe.Must("cpe:2.3:a:musl-libc:musl:1.2.4-r1:*:*:*:*:*:*:*", "")},
			PURL:      "pkg:apk/alpine/musl@1.2.4-r1?arch=x86_64&distro=alpine-3.18.4",
			Upstreams: []pkg.UpstreamPackage{{Name: "musl"}},
			Metadata:  pkg.ApkMetadata{},
		}
	}
	k0, ok := keyOf("apk-matcher", base())
	if !ok {
		t.Fatal("not keyable")
	}
	same := base()
	same.ID = "b"
	same.Locations = file.NewLocationSet(file.NewLocation("/other"))
	same.RelatedPackages = map[artifact.RelationshipType][]*pkg.Package{artifact.OwnershipByFileOverlapRelationship: {&pkg.Package{Name: "x"}}}
	if k, _ := keyOf("apk-matcher", same); k != k0 {
		t.Error("id, locations or related packages changed the key")
	}
	for name, change := range map[string]func(*pkg.Package){
		"version":   func(p *pkg.Package) { p.Version = "1.2.4-r2" },
		"distro":    func(p *pkg.Package) { p.Distro = distro.New(distro.Alpine, "3.19.0", "") },
		"no distro": func(p *pkg.Package) { p.Distro = nil },
		"cpe":       func(p *pkg.Package) { p.CPEs[0] = cpe.Must("cpe:2.3:a:musl:musl:1.2.4-r1:*:*:*:*:*:*:*", "") },
		"purl":      func(p *pkg.Package) { p.PURL += "&upstream=musl" },
		"upstream":  func(p *pkg.Package) { p.Upstreams = nil },
		"metadata":  func(p *pkg.Package) { p.Metadata = pkg.RpmMetadata{} },
		"type":      func(p *pkg.Package) { p.Type = syftPkg.DebPkg },
		"annotations": func(p *pkg.Package) {
			p.Annotations = map[string][]string{"k": {"v"}}
		},
	} {
		p := base()
		change(&p)
		if k, _ := keyOf("apk-matcher", p); k == k0 {
			t.Errorf("%s: same key", name)
		}
	}
	if k, _ := keyOf("stock-matcher", base()); k == k0 {
		t.Error("matcher type: same key")
	}
	p := base()
	p.Metadata = func() {}
	if _, ok := keyOf("apk-matcher", p); ok {
		t.Error("a func in the metadata is keyable")
	}
}

func TestDeepCopy(t *testing.T) {
	d := distro.New(distro.Alpine, "3.18.4", "")
	in := []match.Match{{
		Package: pkg.Package{Name: "musl", Distro: d, CPEs: []cpe.CPE{cpe.Must("cpe:2.3:a:musl:musl:1:*:*:*:*:*:*:*", "")}},
		Details: match.Details{{Type: match.ExactDirectMatch, SearchedBy: match.DistroParameters{Distro: match.DistroIdentification{Type: "alpine"}}}},
	}}
	out, size := deepCopy(in)
	if size <= 0 {
		t.Fatalf("size %d", size)
	}
	if out[0].Package.Distro == d || out[0].Package.Distro.MajorVersion() != "3" || out[0].Package.Distro.MinorVersion() != "18" {
		t.Fatalf("distro not copied with its unexported fields: %+v", out[0].Package.Distro)
	}
	out[0].Package.CPEs[0].Attributes.Product = "changed"
	out[0].Details[0].Type = match.CPEMatch
	if in[0].Package.CPEs[0].Attributes.Product != "musl" || in[0].Details[0].Type != match.ExactDirectMatch {
		t.Fatal("the copy shares memory with the original")
	}
}

// TestMatchCacheKeepsSecondAnswer: an answer computed once is not kept (a
// package only one image has never fills the cache), the second is, and
// is answered from then on; the set of keys seen once starts over when
// full instead of growing.
func TestMatchCacheKeepsSecondAnswer(t *testing.T) {
	c := newMatchCache(1 << 20)
	p := pkg.Package{ID: "p", Name: "musl", Version: "1.2.4-r1", Type: "apk"}
	k, ok := keyOf("apk-matcher", p)
	if !ok {
		t.Fatal("no key")
	}
	c.put(k, p, nil, nil, nil, false)
	if st := c.snapshot(); st.Entries != 0 {
		t.Fatalf("first answer kept: %+v", st)
	}
	if _, _, hit := c.get(k, p, nil); hit {
		t.Fatal("hit after the first answer")
	}
	c.put(k, p, nil, nil, nil, false)
	if st := c.snapshot(); st.Entries != 1 {
		t.Fatalf("second answer not kept: %+v", st)
	}
	if _, _, hit := c.get(k, p, nil); !hit {
		t.Fatal("no hit after the second answer")
	}
	for i := range seenMax + 1 {
		var other cacheKey
		other[0], other[1], other[2] = byte(i), byte(i>>8), byte(i>>16)
		other[31] = 1
		c.computedBefore(other)
	}
	if n := len(c.seen); n > seenMax {
		t.Fatalf("%d keys seen once, bound %d", n, seenMax)
	}
}
