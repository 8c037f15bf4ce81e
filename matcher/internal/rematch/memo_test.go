package rematch

import (
	"bytes"
	"context"
	"crypto/sha256"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anchore/syft/syft/cpe"

	v6 "github.com/anchore/grype/grype/db/v6"

	"github.com/crowsnest-dev/crowsnest/matcher/dbwrite/advisory"
)

func openWith(t *testing.T, dir string, o Options) *Matcher {
	t.Helper()
	m, err := Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// TestMatchMemoSameOutput matches every input with neither the DB memo nor
// the match cache, then with each of them, both, and a memo too small for
// the answers (it evicts), twice each (the second round answers from
// memory): outputs are the same byte for byte once the per-run values are
// set aside, and so are the findings. The inputs include reports that share
// names at other versions, which only the memo answers from memory.
func TestMatchMemoSameOutput(t *testing.T) {
	dir := writeDB(t, append(advisory.All(0), benchAdvisories(3000)...), fixtureBuilt)
	in := cacheInputs(t)
	names := make([]string, 0, len(in))
	for n := range in {
		names = append(names, n)
	}
	slices.Sort(names)

	plain := openWith(t, dir, Options{CacheBytes: -1, MemoBytes: -1})
	want := map[string][]byte{}
	wantFindings := map[string][]Finding{}
	for _, n := range names {
		out, fs, err := plain.Match(context.Background(), in[n])
		if err != nil {
			t.Fatal(err)
		}
		want[n], wantFindings[n] = normalize(t, out, true), fs
	}
	if plain.MemoStats() != (CacheStats{}) || plain.CacheStats() != (CacheStats{}) {
		t.Fatalf("memo and cache off, stats %+v %+v", plain.MemoStats(), plain.CacheStats())
	}

	const smallMemo = 64 << 10
	for _, v := range []struct {
		name string
		o    Options
	}{
		{"memo=on,cache=off", Options{CacheBytes: -1}},
		{"memo=off,cache=on", Options{MemoBytes: -1}},
		{"memo=on,cache=on", Options{}},
		{"memo=64KiB,cache=off", Options{CacheBytes: -1, MemoBytes: smallMemo}},
		// Skipping on: every match records its footprint (footprint.go).
		{"memo=on,cache=on,footprints=on", Options{Footprints: true}},
		{"memo=off,cache=off,footprints=on", Options{CacheBytes: -1, MemoBytes: -1, Footprints: true}},
	} {
		t.Run(v.name, func(t *testing.T) {
			m := openWith(t, dir, v.o)
			for round := range 2 {
				for _, n := range names {
					out, fs, err := m.Match(context.Background(), in[n])
					if err != nil {
						t.Fatal(err)
					}
					if !SameFindings(fs, wantFindings[n]) || len(fs) != len(wantFindings[n]) {
						added, resolved := Diff(wantFindings[n], fs)
						t.Fatalf("%s round %d: findings differ: new %v, resolved %v", n, round, added, resolved)
					}
					if !bytes.Equal(normalize(t, out, true), want[n]) {
						t.Fatalf("%s round %d: output differs", n, round)
					}
				}
			}
			memo, cache := m.MemoStats(), m.CacheStats()
			t.Logf("memo %+v, cache %+v", memo, cache)
			if (v.o.MemoBytes < 0) != (memo == CacheStats{}) || (v.o.CacheBytes < 0) != (cache == CacheStats{}) {
				t.Fatalf("memo %+v, cache %+v for options %+v", memo, cache, v.o)
			}
			bound := v.o.MemoBytes
			if bound == 0 {
				bound = DefaultMemoBytes
			}
			if v.o.MemoBytes >= 0 && (memo.Hits == 0 || memo.Entries == 0 || memo.Bytes <= 0 || memo.Bytes > bound) {
				t.Fatalf("memo stats %+v, bound %d", memo, bound)
			}
			if v.o.CacheBytes >= 0 && (cache.Hits == 0 || cache.Entries == 0 || cache.Bytes <= 0 || cache.Bytes > DefaultCacheBytes) {
				t.Fatalf("cache stats %+v", cache)
			}
		})
	}
}

// TestFootprintSameFromMemory checks that a report's footprint does not
// depend on where the answers came from: with the match cache and the DB
// memo on (the second round answers from memory, the cache adding the keys
// its answers were recorded with) it equals the footprint of a match that
// asks the store everything.
func TestFootprintSameFromMemory(t *testing.T) {
	dir := writeDB(t, append(advisory.All(0), benchAdvisories(3000)...), fixtureBuilt)
	in := cacheInputs(t)
	plain := openWith(t, dir, Options{CacheBytes: -1, MemoBytes: -1, Footprints: true})
	cached := openWith(t, dir, Options{Footprints: true})
	for round := range 2 {
		for n, bom := range in {
			want, err := plain.MatchOutput(context.Background(), bom)
			if err != nil {
				t.Fatal(err)
			}
			got, err := cached.MatchOutput(context.Background(), bom)
			if err != nil {
				t.Fatal(err)
			}
			if len(want.Footprint()) == 0 || !slices.Equal(want.Footprint(), got.Footprint()) {
				t.Fatalf("%s round %d: footprint %d keys from memory, %d from the store", n, round,
					len(got.Footprint()), len(want.Footprint()))
			}
		}
	}
	if cached.CacheStats().Hits == 0 {
		t.Fatal("no match-cache hits: the test does not cover cached answers")
	}
}

// TestMemoStatements counts the SQL statements Grype's store runs for
// fleet reports that share names at other versions: with the memo, a
// fraction of those without it.
func TestMemoStatements(t *testing.T) {
	dir := writeDB(t, append(advisory.All(0), benchAdvisories(3000)...), fixtureBuilt)
	var boms [][]byte
	for i, v := range []string{"0.0.0-r1", "1.0.0-r3", "2.0.0-r0", "1.0.0-r0"} {
		boms = append(boms, fleetSBOMAt(t, 20+i, 40, 0.8, v))
	}
	count := func(o Options) int64 {
		m := openWith(t, dir, o)
		before := work.sqlStatements.Load()
		for _, b := range boms {
			if _, _, err := m.Match(context.Background(), b); err != nil {
				t.Fatal(err)
			}
		}
		return work.sqlStatements.Load() - before
	}
	off := count(Options{CacheBytes: -1, MemoBytes: -1})
	on := count(Options{CacheBytes: -1})
	t.Logf("SQL statements for %d reports: memo off %d, on %d", len(boms), off, on)
	if off == 0 || on*4 > off {
		t.Fatalf("memo off %d statements, on %d: want on ≤ off/4", off, on)
	}
}

// TestMemoKey: equal arguments give equal keys, any difference but a CPE's
// version and update a different one, and what cannot be encoded
// faithfully is refused.
func TestMemoKey(t *testing.T) {
	c := cpe.Must("cpe:2.3:a:musl-libc:musl:1.2.4-r1:*:*:*:*:*:*:*", "").Attributes
	base := func() (*v6.PackageSpecifier, *v6.GetPackageOptions) {
		cc := c
		after := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
		return &v6.PackageSpecifier{Name: "musl", Ecosystem: "apk", CPE: &cc},
			&v6.GetPackageOptions{
				OSs:             v6.OSSpecifiers{{Name: "alpine", MajorVersion: "3", MinorVersion: "18"}},
				Vulnerabilities: v6.VulnerabilitySpecifiers{{Name: "CVE-1", PublishedAfter: &after, Providers: []string{"nvd"}}},
				PreloadBlob:     true,
			}
	}
	key := func(s *v6.PackageSpecifier, o *v6.GetPackageOptions) memoID {
		t.Helper()
		ks := *s
		ks.CPE = withoutVersion(s.CPE)
		k, ok := memoKey("GetAffectedPackages", &ks, o)
		if !ok {
			t.Fatal("not encodable")
		}
		return k
	}
	k0 := key(base())
	s, o := base()
	s.CPE.Version, s.CPE.Update = "9.9.9", "p1"
	if key(s, o) != k0 {
		t.Error("the CPE's version or update changed the key")
	}
	if s.CPE.Version != "9.9.9" {
		t.Error("withoutVersion changed the caller's CPE")
	}
	for name, change := range map[string]func(*v6.PackageSpecifier, *v6.GetPackageOptions){
		"name":        func(s *v6.PackageSpecifier, _ *v6.GetPackageOptions) { s.Name = "musl-utils" },
		"ecosystem":   func(s *v6.PackageSpecifier, _ *v6.GetPackageOptions) { s.Ecosystem = "" },
		"cpe vendor":  func(s *v6.PackageSpecifier, _ *v6.GetPackageOptions) { s.CPE.Vendor = "musl" },
		"cpe target":  func(s *v6.PackageSpecifier, _ *v6.GetPackageOptions) { s.CPE.TargetSW = "linux" },
		"no cpe":      func(s *v6.PackageSpecifier, _ *v6.GetPackageOptions) { s.CPE = nil },
		"os minor":    func(_ *v6.PackageSpecifier, o *v6.GetPackageOptions) { o.OSs[0].MinorVersion = "19" },
		"os channel":  func(_ *v6.PackageSpecifier, o *v6.GetPackageOptions) { o.OSs[0].Channel = "eus" },
		"any os":      func(_ *v6.PackageSpecifier, o *v6.GetPackageOptions) { o.OSs = v6.OSSpecifiers{v6.AnyOSSpecified} },
		"no os":       func(_ *v6.PackageSpecifier, o *v6.GetPackageOptions) { o.OSs = v6.OSSpecifiers{v6.NoOSSpecified} },
		"os list nil": func(_ *v6.PackageSpecifier, o *v6.GetPackageOptions) { o.OSs = nil },
		"vuln name":   func(_ *v6.PackageSpecifier, o *v6.GetPackageOptions) { o.Vulnerabilities[0].Name = "CVE-2" },
		"vuln time":   func(_ *v6.PackageSpecifier, o *v6.GetPackageOptions) { o.Vulnerabilities[0].PublishedAfter = nil },
		"vuln provider": func(_ *v6.PackageSpecifier, o *v6.GetPackageOptions) {
			o.Vulnerabilities[0].Providers = append(o.Vulnerabilities[0].Providers, "alpine")
		},
		"preload": func(_ *v6.PackageSpecifier, o *v6.GetPackageOptions) { o.PreloadBlob = false },
		"broad":   func(_ *v6.PackageSpecifier, o *v6.GetPackageOptions) { o.AllowBroadCPEMatching = true },
		"limit":   func(_ *v6.PackageSpecifier, o *v6.GetPackageOptions) { o.Limit = 1 },
	} {
		s, o := base()
		change(s, o)
		if key(s, o) == k0 {
			t.Errorf("%s: same key", name)
		}
	}
	s, o = base()
	if k, _ := memoKeyText(nil, "GetUnaffectedPackages", s, o); strings.HasPrefix(string(k), "GetAffectedPackages|") {
		t.Error("the method is not in the key")
	}
	if k, _ := memoKey("GetUnaffectedPackages", s, o); k == k0 {
		t.Error("the method does not change the key")
	}
	ks := *s
	ks.CPE = withoutVersion(s.CPE)
	if text, _ := memoKeyText(nil, "GetAffectedPackages", &ks, o); sha256.Sum256(text) != k0 {
		t.Error("the key is not the SHA-256 of the encoding")
	}
	if a, _ := memoKey("x", []any{1}); a == func() memoID { k, _ := memoKey("x", []any{uint(1)}); return k }() {
		t.Error("an int and a uint in an interface give the same key")
	}
	if a, _ := memoKey("x", "a,", "b"); a == func() memoID { k, _ := memoKey("x", "a", ",b"); return k }() {
		t.Error("strings are not delimited")
	}
	if _, ok := memoKey("x", map[string]string{"a": "b"}); ok {
		t.Error("a map is encodable")
	}
	if _, ok := memoKey("x", struct{ f int }{1}); ok {
		t.Error("an unexported field is encodable")
	}
}

// TestMemoAnswersStayAsKept: a hit on a package or CPE lookup hands out
// the kept handles copied, with what they point to (blobs, packages, CPEs,
// operating systems) shared with the memo (handlesOut). Grype must then
// only read what they point to. The first round fills the memo; every
// kept answer is snapshotted (deep-copied); the second round matches the
// same reports again from hits, with the match cache off so every package
// goes through Grype's matchers, fills and conversions; then every kept
// answer still in the memo must equal its snapshot, and the outputs the
// first round's.
func TestMemoAnswersStayAsKept(t *testing.T) {
	dir := writeDB(t, append(advisory.All(0), benchAdvisories(3000)...), fixtureBuilt)
	in := cacheInputs(t)
	m := openWith(t, dir, Options{CacheBytes: -1})
	first := map[string][]byte{}
	for n, bom := range in {
		out, _, err := m.Match(context.Background(), bom)
		if err != nil {
			t.Fatal(err)
		}
		first[n] = normalize(t, out, true)
	}
	mem := m.memo.memo
	snapshot := map[memoID]any{}
	shared := 0
	mem.mu.Lock()
	for k, el := range mem.entries {
		v := el.Value.(*lruEntry[memoID, any]).value
		snapshot[k], _ = deepCopy(v)
		switch a := v.(type) {
		case pkgAnswer[v6.AffectedPackageHandle]:
			for _, h := range a.Handles {
				if h.BlobValue != nil {
					shared++
				}
			}
		case []v6.AffectedCPEHandle:
			for _, h := range a {
				if h.BlobValue != nil {
					shared++
				}
			}
		}
	}
	mem.mu.Unlock()
	if shared == 0 {
		t.Fatal("no kept package or CPE answer points to a blob: the test shares nothing")
	}
	hits := mem.snapshot().Hits
	for n, bom := range in {
		out, _, err := m.Match(context.Background(), bom)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(normalize(t, out, true), first[n]) {
			t.Errorf("%s: the second round's output differs from the first's", n)
		}
	}
	hits = mem.snapshot().Hits - hits
	if hits == 0 {
		t.Fatal("no memo hits in the second round")
	}
	mem.mu.Lock()
	defer mem.mu.Unlock()
	checked := 0
	for k, want := range snapshot {
		el, ok := mem.entries[k]
		if !ok {
			continue
		}
		checked++
		if got := el.Value.(*lruEntry[memoID, any]).value; !reflect.DeepEqual(got, want) {
			t.Errorf("a kept %T changed after it was handed out", got)
		}
	}
	t.Logf("%d kept answers checked (%d handles sharing a blob), %d hits in the second round", checked, shared, hits)
}
