package rematch

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	v6 "github.com/anchore/grype/grype/db/v6"

	"github.com/crowsnest-dev/crowsnest/matcher/dbwrite"
	"github.com/crowsnest-dev/crowsnest/matcher/dbwrite/advisory"
)

// fixtureDir holds real Grype CycloneDX output (docs/fixtures.md), made
// with a DB of advisory.Real built at fixtureBuilt.
const fixtureDir = "../../../results-api/testdata/grype"

var fixtureBuilt = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

type fixtureEntry struct {
	Name, File, Image, Digest string
	Findings                  int
	Synthetic                 bool
}

func fixtures(t testing.TB) []fixtureEntry {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(fixtureDir, "manifest.json"))
	if err != nil {
		t.Fatalf("fixtures missing (make fixtures): %v", err)
	}
	var m struct{ Fixtures []fixtureEntry }
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m.Fixtures
}

func fixtureBOM(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtureDir, name+".cdx.json"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// writeDB writes advs with Grype's writer (dbwrite) and hydrates the DB the
// way `grype db import` does, into a new directory.
func writeDB(t testing.TB, advs []advisory.Advisory, built time.Time) string {
	t.Helper()
	dir := t.TempDir()
	if _, err := dbwrite.Write(dir, advs, built); err != nil {
		t.Fatal(err)
	}
	if err := v6.Hydrater()(dir); err != nil {
		t.Fatalf("hydrate: %v", err)
	}
	return dir
}

func openDB(t testing.TB, dir string) *Matcher {
	t.Helper()
	m, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// The DB change the tests make on top of the fixtures' DB (test data, not
// real advisory history):
var (
	// gained: Alpine's zlib gets an advisory it did not have.
	gained = advisory.Advisory{
		ID: "CVE-2023-45853", Provider: advisory.ProviderAlpine, URL: "https://security.alpinelinux.org/vuln/CVE-2023-45853",
		Affected: []advisory.Affected{{OS: advisory.Alpine318, Ecosystem: advisory.EcosystemApk, Name: "zlib",
			Constraint: "< 1.2.13-r2", Fixed: "1.2.13-r2"}},
	}
	withdrawn    = "CVE-2024-5535"  // Alpine's OpenSSL record is withdrawn
	fixedEarlier = "CVE-2023-42363" // Alpine's busybox record now says 1.36.1-r2 has the fix
)

// withdrawnNPM is a GitHub advisory withdrawn in the changed DB: the node
// fixture loses its semver finding.
const withdrawnNPM = "GHSA-c2qf-rxjj-qqgw"

// changedAdvisories is advisory.Real with the change above.
func changedAdvisories() []advisory.Advisory {
	var out []advisory.Advisory
	for _, a := range advisory.Real {
		if a.ID == withdrawnNPM {
			continue
		}
		if a.Provider == advisory.ProviderAlpine {
			switch a.ID {
			case withdrawn:
				continue
			case fixedEarlier:
				a.Affected = slices.Clone(a.Affected)
				a.Affected[0].Fixed, a.Affected[0].Constraint = "1.36.1-r2", "< 1.36.1-r2"
			}
		}
		out = append(out, a)
	}
	return append(out, gained)
}

// writeUnhydrated writes an empty DB as Grype's writer leaves it when it
// closes: indexes dropped, as published archives hold it.
func writeUnhydrated(dir string) error {
	w, err := v6.NewWriter(v6.Config{DBDirPath: dir})
	if err != nil {
		return err
	}
	if err := w.SetDBMetadata(); err != nil {
		_ = w.Close()
		return err
	}
	return w.Close()
}
