package rematch

import (
	"bytes"
	"testing"
)

// TestFootprintStoreRoundTrip writes footprints, reopens the file and
// reads them back: the build, the findings fingerprint, and keys that meet
// a diff naming one of them and no diff naming none; a footprint carried
// over by a skip (ids, no keys) keeps its keys.
func TestFootprintStoreRoundTrip(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenFootprints(dir)
	if err != nil {
		t.Fatal(err)
	}
	fp := []byte{1, 2, 3, 4}
	err = s.put(map[string]footprint{
		"sha256:a": {Built: db1Built, Findings: fp, Keys: []string{"p:zlib", "v:cve-1", keyAnyCPE, "c:zlib"}},
		"sha256:b": {Built: db1Built, Findings: fp, Keys: []string{"p:openssl"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = OpenFootprints(dir); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a, ok, err := s.get("sha256:a")
	if err != nil || !ok || !a.Built.Equal(db1Built) || !bytes.Equal(a.Findings, fp) || len(a.ids) != 4 {
		t.Fatalf("get: %+v %v %v", a, ok, err)
	}
	if _, ok, _ := s.get("sha256:none"); ok {
		t.Fatal("footprint of an unknown report")
	}
	meets := func(fp footprint, keys ...string) bool {
		set := map[string]struct{}{}
		for _, k := range keys {
			set[k] = struct{}{}
		}
		ids, err := s.keyIDs(set)
		if err != nil {
			t.Fatal(err)
		}
		return fp.meets(ids)
	}
	if !meets(a, "c:*") || !meets(a, "v:cve-1", "p:never-seen") || meets(a, "p:openssl", "p:never-seen") {
		t.Fatal("meets: wrong answer")
	}
	if err := s.put(map[string]footprint{"sha256:a": {Built: db2Built, Findings: a.Findings, ids: a.ids}}); err != nil {
		t.Fatal(err)
	}
	carried, _, _ := s.get("sha256:a")
	if !carried.Built.Equal(db2Built) || !meets(carried, "p:zlib") {
		t.Fatalf("carried over: %+v", carried)
	}
}
