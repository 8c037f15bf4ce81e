package rematch

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"

	"github.com/crowsnest-dev/crowsnest/matcher/dbwrite/advisory"
)

func storedFindings(t testing.TB, bom []byte) []Finding {
	t.Helper()
	var b cdx.BOM
	if err := json.Unmarshal(bom, &b); err != nil {
		t.Fatal(err)
	}
	return FindingsOf(&b)
}

func keys(fs []Finding) []Key {
	out := make([]Key, len(fs))
	for i, f := range fs {
		out[i] = f.Key
	}
	return out
}

// TestMatchReproducesFixtures matches every real fixture against the DB it
// was made with: the same findings (keys and severities) come out.
func TestMatchReproducesFixtures(t *testing.T) {
	m := openDB(t, writeDB(t, advisory.Real, fixtureBuilt))
	if got := m.DB(); !got.Built.Equal(fixtureBuilt) || got.Schema == "" {
		t.Fatalf("DB %+v", got)
	}
	for _, f := range fixtures(t) {
		if f.Synthetic {
			continue
		}
		t.Run(f.Name, func(t *testing.T) {
			bom := fixtureBOM(t, f.Name)
			out, got, err := m.Match(context.Background(), bom)
			if err != nil {
				t.Fatal(err)
			}
			want := storedFindings(t, bom)
			if len(want) != f.Findings {
				t.Fatalf("fixture has %d findings, manifest says %d", len(want), f.Findings)
			}
			if !SameFindings(got, want) {
				added, resolved := Diff(want, got)
				t.Fatalf("findings differ: new %v, resolved %v", added, resolved)
			}
			if again := storedFindings(t, out); !SameFindings(again, got) {
				t.Fatal("findings read back from the output differ from those returned")
			}
			checkOutput(t, out, m.DB(), bom)
			// The output is a complete SBOM again: matching it gives the same.
			_, again, err := m.Match(context.Background(), out)
			if err != nil || !SameFindings(again, got) {
				t.Fatalf("re-matching the output: %v, same=%v", err, SameFindings(again, got))
			}
		})
	}
}

// checkOutput checks what Match adds and keeps: the DB properties, Grype as
// the tool, and every component of the input.
func checkOutput(t *testing.T, out []byte, db DB, in []byte) {
	t.Helper()
	var o, i cdx.BOM
	if err := json.Unmarshal(out, &o); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(in, &i); err != nil {
		t.Fatal(err)
	}
	props := map[string]string{}
	for _, p := range *o.Metadata.Properties {
		props[p.Name] = p.Value
	}
	if props[PropertyDBBuilt] != db.Built.Format(time.RFC3339) || props[PropertyDBSchema] != db.Schema {
		t.Fatalf("metadata properties %v, want DB %+v", props, db)
	}
	tools := *o.Metadata.Tools.Components
	if len(tools) != 1 || tools[0].Name != "grype" || tools[0].Version != (*i.Metadata.Tools.Components)[0].Version {
		t.Fatalf("tools %+v", tools)
	}
	if o.Metadata.Component == nil || o.Metadata.Component.Name != i.Metadata.Component.Name {
		t.Fatalf("metadata component %+v, input %+v", o.Metadata.Component, i.Metadata.Component)
	}
	refs := func(b cdx.BOM) []string {
		var r []string
		for _, c := range *b.Components {
			r = append(r, string(c.Type)+"|"+c.Name+"|"+c.Version+"|"+c.PackageURL)
		}
		slices.Sort(r)
		return r
	}
	if !slices.Equal(refs(o), refs(i)) {
		t.Fatalf("components differ:\n out %v\n in  %v", refs(o), refs(i))
	}
}

// TestMatchDBChange matches the alpine fixture against a changed DB: exactly
// the gained keys are new and the withdrawn and fixed ones resolved; an
// identical DB built later gives identical findings.
func TestMatchDBChange(t *testing.T) {
	bom := fixtureBOM(t, "alpine")
	stored := storedFindings(t, bom)

	m2 := openDB(t, writeDB(t, changedAdvisories(), fixtureBuilt.Add(24*time.Hour)))
	_, got, err := m2.Match(context.Background(), bom)
	if err != nil {
		t.Fatal(err)
	}
	added, resolved := Diff(stored, got)
	wantAdded := []Key{{ID: "CVE-2023-45853", Name: "zlib", Version: "1.2.13-r1", Type: "apk"}}
	wantResolved := []Key{
		{ID: "CVE-2023-42363", Name: "busybox", Version: "1.36.1-r2", Type: "apk"},
		{ID: "CVE-2023-42363", Name: "busybox-binsh", Version: "1.36.1-r2", Type: "apk"},
		{ID: "CVE-2024-5535", Name: "libcrypto3", Version: "3.1.1-r1", Type: "apk"},
		{ID: "CVE-2024-5535", Name: "libssl3", Version: "3.1.1-r1", Type: "apk"},
	}
	if !slices.Equal(added, wantAdded) || !slices.Equal(resolved, wantResolved) {
		t.Fatalf("new %v\nresolved %v\nwant new %v\nresolved %v", added, resolved, wantAdded, wantResolved)
	}
	if len(got) != len(stored)+len(added)-len(resolved) {
		t.Fatalf("%d findings, want %d", len(got), len(stored)+len(added)-len(resolved))
	}

	same := openDB(t, writeDB(t, advisory.Real, fixtureBuilt.Add(48*time.Hour)))
	_, got, err = same.Match(context.Background(), bom)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(keys(got), keys(stored)) || !SameFindings(got, stored) {
		t.Fatal("an identical DB changed the findings")
	}
}

func TestMatchRefusesNonCycloneDX(t *testing.T) {
	m := openDB(t, writeDB(t, advisory.Real, fixtureBuilt))
	for _, in := range []string{`{"spdxVersion":"SPDX-2.3"}`, `{"bomFormat":"CycloneDX"}`, `not json`, `[]`} {
		if _, _, err := m.Match(context.Background(), []byte(in)); !errors.Is(err, ErrNotCycloneDX) {
			t.Errorf("%s: err %v, want ErrNotCycloneDX", in, err)
		}
	}
}

func TestMatchCancelled(t *testing.T) {
	m := openDB(t, writeDB(t, advisory.Real, fixtureBuilt))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := m.Match(ctx, fixtureBOM(t, "alpine")); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
}

func TestMatchConcurrent(t *testing.T) {
	m := openDB(t, writeDB(t, advisory.Real, fixtureBuilt))
	names := []string{"alpine", "debian", "node", "gobinary", "clean"}
	want := map[string][]Finding{}
	for _, n := range names {
		want[n] = storedFindings(t, fixtureBOM(t, n))
	}
	errs := make(chan error, 4*len(names))
	for range 4 {
		for _, n := range names {
			go func() {
				_, got, err := m.Match(context.Background(), fixtureBOM(t, n))
				if err == nil && !SameFindings(got, want[n]) {
					err = errors.New(n + ": findings differ under concurrency")
				}
				errs <- err
			}()
		}
	}
	for range 4 * len(names) {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

func TestOpenRefusesUnhydratedDB(t *testing.T) {
	dir := t.TempDir()
	if err := writeUnhydrated(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, Options{}); !errors.Is(err, ErrNotHydrated) {
		t.Fatalf("err %v, want ErrNotHydrated", err)
	}
}

func TestGrypeVersionMatchesGoMod(t *testing.T) {
	b, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	if want := grypeModule + " v" + grypeVersion + "\n"; !strings.Contains(string(b), want) {
		t.Fatalf("go.mod does not require %q: update grypeVersion", strings.TrimSpace(want))
	}
}
