package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/matcher/dbwrite"
	"github.com/crowsnest-dev/crowsnest/matcher/dbwrite/advisory"
	"github.com/crowsnest-dev/crowsnest/test/support/resultsapitest"
)

// fixtureDir holds real Grype CycloneDX output (docs/fixtures.md), made
// with a DB of advisory.Real built at `built`.
const fixtureDir = "../../../results-api/testdata/grype"

// storedFixtures are stored in results-api; DB 2 (changedAdvisories)
// changes alpine's, clean's and node's findings, not debian's or gobinary's.
var storedFixtures = []string{"alpine", "debian", "gobinary", "node", "clean"}

var changedByDB2 = map[string]bool{"alpine": true, "clean": true, "node": true}

// changedAdvisories is advisory.Real with the change the rematch pass tests
// make (test data, not real advisory history): Alpine's zlib gains
// CVE-2023-45853, Alpine's OpenSSL CVE-2024-5535 is withdrawn, Alpine's
// busybox CVE-2023-42363 is fixed earlier and the npm GHSA-c2qf-rxjj-qqgw
// is withdrawn.
func changedAdvisories() []advisory.Advisory {
	var out []advisory.Advisory
	for _, a := range advisory.Real {
		if a.ID == "GHSA-c2qf-rxjj-qqgw" {
			continue
		}
		if a.Provider == advisory.ProviderAlpine {
			switch a.ID {
			case "CVE-2024-5535":
				continue
			case "CVE-2023-42363":
				a.Affected = slices.Clone(a.Affected)
				a.Affected[0].Fixed, a.Affected[0].Constraint = "1.36.1-r2", "< 1.36.1-r2"
			}
		}
		out = append(out, a)
	}
	return append(out, advisory.Advisory{
		ID: "CVE-2023-45853", Provider: advisory.ProviderAlpine, URL: "https://security.alpinelinux.org/vuln/CVE-2023-45853",
		Affected: []advisory.Affected{{OS: advisory.Alpine318, Ecosystem: advisory.EcosystemApk, Name: "zlib",
			Constraint: "< 1.2.13-r2", Fixed: "1.2.13-r2"}},
	})
}

type storedReport struct{ name, digest string }

func storeFixtures(t *testing.T, api *resultsapitest.Server) []storedReport {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtureDir, "manifest.json"))
	if err != nil {
		t.Fatalf("fixtures missing: %v", err)
	}
	var m struct {
		Fixtures []struct{ Name, Digest string }
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	var out []storedReport
	for _, f := range m.Fixtures {
		if !slices.Contains(storedFixtures, f.Name) {
			continue
		}
		bom, err := os.ReadFile(filepath.Join(fixtureDir, f.Name+".cdx.json"))
		if err != nil {
			t.Fatal(err)
		}
		api.PutReport(t, f.Digest, bom)
		out = append(out, storedReport{f.Name, f.Digest})
	}
	if len(out) != len(storedFixtures) {
		t.Fatalf("stored %d fixtures, want %d", len(out), len(storedFixtures))
	}
	return out
}

// runningServe is one `matcher serve` process, in-process.
type runningServe struct {
	base string
	stop func()
}

func startServe(t *testing.T, args []string) *runningServe {
	t.Helper()
	o, err := parseServe(args, noEnv, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, o, deps{listener: ln, log: testLog{t}}) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve: %v", err)
			}
		case <-time.After(60 * time.Second):
			t.Error("serve did not stop")
		}
	}
	t.Cleanup(stop)
	return &runningServe{base: "http://" + ln.Addr().String(), stop: stop}
}

// testLog shows serve's warnings and errors in the test's output.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// uploadDB writes a DB of advs built at b and uploads it through the admin
// endpoint, as an air-gapped admin would.
func uploadDB(t *testing.T, base, token string, advs []advisory.Advisory, b time.Time) {
	t.Helper()
	up, err := dbwrite.WriteUpstream(t.TempDir(), advs, b)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(up.ArchivePath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	req, err := http.NewRequest(http.MethodPost, base+"/api/v1/vulndb/import?checksum="+up.Archive.Checksum, f)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("upload DB built %s: HTTP %d %s", b, resp.StatusCode, body)
	}
}
