package service_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/test/support"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/apitest"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
)

// The real Grype fixture scanned here (testdata/grype, README).
const (
	alpineFixture = "../../testdata/grype/alpine.cdx.json"
	alpineDigest  = "sha256:6e71592927f32f137c5dc6a508967f5c481dad9963132c126d717f0e43794b96"
)

// TestVEXExportThroughGrype exports team-a's decisions about a real Grype
// report as OpenVEX, checks the document against the OpenVEX v0.2.0
// schema's rules, and feeds it to the real Grype CLI (--vex) scanning the
// same SBOM: exactly the findings the decisions cover leave Grype's
// matches; the others stay. Team-b's view of the same image has no
// decisions (404).
func TestVEXExportThroughGrype(t *testing.T) {
	grype, vulndb := grypeTools(t)
	e := newExceptionEnv(t)
	e.except("team-a", "busybox", []string{"CVE-2023-42363"}, nil)
	e.except("team-a", "libssl-only", []string{"CVE-2024-5535"}, func(s map[string]any) {
		s["packages"], s["status"] = []any{"pkg:apk/alpine/libssl3@*"}, "fixed" // backported, say
		delete(s, "justification")
	})
	e.start()
	bom, err := os.ReadFile(alpineFixture)
	if err != nil {
		t.Fatal(err)
	}
	(&apitest.Server{URL: e.url, Token: adminToken}).PutReport(t, alpineDigest, bom)
	for _, ns := range []string{"team-a", "team-b"} {
		inv := store.Inventory{Namespace: ns, EventID: ns + "-2", Time: time.Now()}
		inv.Entries = []store.InventoryEntry{{Kind: "Deployment", Name: "alpine", Container: "c", Digest: alpineDigest, Pods: 1}}
		if _, err := e.svc.Store.ApplyInventory(e.c.ctx, inv); err != nil {
			t.Fatal(err)
		}
	}
	alice, bob := e.c.token("alice"), e.c.token("bob")
	if code, b := e.get("/api/v1/reports/"+alpineDigest+"/vex", "Authorization", "Bearer "+bob); code != http.StatusNotFound ||
		!strings.Contains(string(b), "no_decisions") {
		t.Errorf("team-b's VEX: %d %s, want 404 no_decisions", code, b)
	}
	code, doc := e.get("/api/v1/reports/"+alpineDigest+"/vex?packageProducts=true", "Authorization", "Bearer "+alice)
	if code != http.StatusOK {
		t.Fatalf("VEX: %d %s", code, doc)
	}
	checkOpenVEX(t, doc)

	dir := t.TempDir()
	run := func(args ...string) []byte {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, grype, args...)
		cmd.Env = append(os.Environ(), "GRYPE_DB_CACHE_DIR="+filepath.Join(dir, "cache"), "GRYPE_DB_AUTO_UPDATE=false",
			"GRYPE_DB_VALIDATE_AGE=false", "GRYPE_DB_REQUIRE_UPDATE_CHECK=false", "GRYPE_CHECK_FOR_APP_UPDATE=false")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("grype %v: %v\n%s", args, err, stderr.String())
		}
		return out
	}
	if out, err := exec.Command(vulndb, "--out", filepath.Join(dir, "db")).CombinedOutput(); err != nil {
		t.Fatalf("vulndb: %v\n%s", err, out)
	}
	run("db", "import", filepath.Join(dir, "db", "vulnerability.db"))
	vexFile := filepath.Join(dir, "crowsnest.vex.json")
	if err := os.WriteFile(vexFile, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	before := grypeMatches(t, run("sbom:"+alpineFixture, "-o", "json"))
	after := grypeMatches(t, run("sbom:"+alpineFixture, "-o", "json", "--vex", vexFile))
	var gone []string
	for _, m := range before {
		if !slices.Contains(after, m) {
			gone = append(gone, m)
		}
	}
	want := []string{"CVE-2023-42363 busybox", "CVE-2023-42363 busybox-binsh", "CVE-2024-5535 libssl3"}
	if slices.Sort(gone); !slices.Equal(gone, want) {
		t.Errorf("--vex removed %v from Grype's matches, want %v", gone, want)
	}
	if !slices.Contains(after, "CVE-2024-5535 libcrypto3") {
		t.Errorf("CVE-2024-5535 in libcrypto3 (no decision) left Grype's matches: %v", after)
	}
}

// grypeMatches lists "id package" of Grype's JSON matches.
func grypeMatches(t *testing.T, out []byte) []string {
	t.Helper()
	var doc struct {
		Matches []struct {
			Vulnerability struct{ ID string }
			Artifact      struct{ Name string }
		}
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatalf("grype JSON: %v", err)
	}
	var ms []string
	for _, m := range doc.Matches {
		ms = append(ms, m.Vulnerability.ID+" "+m.Artifact.Name)
	}
	return ms
}

// grypeTools finds bin/grype and bin/vulndb (hack/tools.sh grype builds
// both); without them the test fails: a VEX export no consumer read is
// not tested.
func grypeTools(t *testing.T) (grype, vulndb string) {
	t.Helper()
	root, err := support.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	grype, vulndb = filepath.Join(root, "bin", "grype"), filepath.Join(root, "bin", "vulndb")
	if p := os.Getenv("CROWSNEST_GRYPE_BIN"); p != "" {
		grype = p
	}
	for _, p := range []string{grype, vulndb} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%v (run hack/tools.sh grype)", err)
		}
	}
	return grype, vulndb
}

// checkOpenVEX applies the rules of OpenVEX's JSON schema v0.2.0
// (openvex/spec openvex_json_schema.json) to doc. The schema itself is not
// vendored here; these are its rules, field by field: required fields,
// no unknown fields, the status and justification enums, at least one
// statement, and for not_affected exactly one of justification and
// impact_statement, for affected an action_statement.
func checkOpenVEX(t *testing.T, doc []byte) {
	t.Helper()
	type component struct {
		ID            string `json:"@id"`
		Subcomponents []struct {
			ID string `json:"@id"`
		} `json:"subcomponents"`
	}
	var d struct {
		Context    *string    `json:"@context"`
		ID         *string    `json:"@id"`
		Author     *string    `json:"author"`
		Timestamp  *time.Time `json:"timestamp"`
		Version    *int       `json:"version"`
		Tooling    string     `json:"tooling"`
		Statements []struct {
			Vulnerability *struct {
				Name *string `json:"name"`
			} `json:"vulnerability"`
			Timestamp       *time.Time  `json:"timestamp"`
			Products        []component `json:"products"`
			Status          *string     `json:"status"`
			StatusNotes     string      `json:"status_notes"`
			Justification   *string     `json:"justification"`
			ImpactStatement *string     `json:"impact_statement"`
			ActionStatement *string     `json:"action_statement"`
			Supplier        string      `json:"supplier"`
		} `json:"statements"`
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.DisallowUnknownFields() // additionalProperties: false, everywhere
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("not an OpenVEX document: %v\n%s", err, doc)
	}
	isURI := func(s string) bool { u, err := url.Parse(s); return err == nil && u.Scheme != "" }
	if d.Context == nil || *d.Context != "https://openvex.dev/ns/v0.2.0" || d.ID == nil || !isURI(*d.ID) || d.Author == nil ||
		d.Timestamp == nil || d.Version == nil || *d.Version < 1 || len(d.Statements) == 0 {
		t.Fatalf("document fields missing or invalid: %s", doc)
	}
	justifications := []string{"component_not_present", "vulnerable_code_not_present", "vulnerable_code_not_in_execute_path",
		"vulnerable_code_cannot_be_controlled_by_adversary", "inline_mitigations_already_exist"}
	seen := map[string]bool{}
	for i, s := range d.Statements {
		b, _ := json.Marshal(s)
		if seen[string(b)] {
			t.Errorf("statement %d repeats another (uniqueItems)", i)
		}
		seen[string(b)] = true
		if s.Vulnerability == nil || s.Vulnerability.Name == nil || s.Status == nil {
			t.Errorf("statement %d: vulnerability.name and status are required", i)
			continue
		}
		switch *s.Status {
		case "not_affected":
			if (s.Justification == nil) == (s.ImpactStatement == nil) {
				t.Errorf("statement %d: not_affected needs exactly one of justification and impact_statement", i)
			}
		case "affected":
			if s.ActionStatement == nil {
				t.Errorf("statement %d: affected needs an action_statement", i)
			}
		case "fixed", "under_investigation":
		default:
			t.Errorf("statement %d: status %q", i, *s.Status)
		}
		if s.Justification != nil && !slices.Contains(justifications, *s.Justification) {
			t.Errorf("statement %d: justification %q", i, *s.Justification)
		}
		for _, p := range s.Products {
			if !isURI(p.ID) {
				t.Errorf("statement %d: product @id %q is not a URI", i, p.ID)
			}
			for _, c := range p.Subcomponents {
				if !isURI(c.ID) {
					t.Errorf("statement %d: subcomponent @id %q is not a URI", i, c.ID)
				}
			}
		}
	}
}
