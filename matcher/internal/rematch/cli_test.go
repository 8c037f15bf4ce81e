package rematch

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
)

// grypeCLI finds a Grype CLI binary built from the same module versions:
// $CROWSNEST_GRYPE_BIN, or the repository's bin/grype (hack/tools.sh grype).
// make test-matcher sets CROWSNEST_GRYPE_BIN: there a missing CLI fails.
func grypeCLI(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CROWSNEST_GRYPE_BIN"); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("CROWSNEST_GRYPE_BIN: %v", err)
		}
	}
	for _, p := range []string{os.Getenv("CROWSNEST_GRYPE_BIN"), "../../../bin/grype"} {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			abs, _ := filepath.Abs(p)
			return abs
		}
	}
	t.Skip("no Grype CLI: set CROWSNEST_GRYPE_BIN or run hack/tools.sh grype")
	return ""
}

// TestMatchEqualsGrypeCLI runs `grype sbom:FILE -o cyclonedx-json` on the
// changed DB for every real fixture and compares it with Match's output:
// byte for byte, once the per-run values (serial number, timestamp) and the
// DB properties Match adds are set aside. It does so with the Matcher's
// defaults (DB memo and match cache on) and with both off.
func TestMatchEqualsGrypeCLI(t *testing.T) {
	bin := grypeCLI(t)
	dbDir := writeDB(t, changedAdvisories(), fixtureBuilt.Add(24*time.Hour))
	cache := t.TempDir()
	env := append(os.Environ(), "GRYPE_DB_CACHE_DIR="+cache, "GRYPE_DB_AUTO_UPDATE=false", "GRYPE_DB_VALIDATE_AGE=false",
		"GRYPE_DB_REQUIRE_UPDATE_CHECK=false", "GRYPE_CHECK_FOR_APP_UPDATE=false")
	grype := func(args ...string) []byte {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = env
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("grype %v: %v\n%s", args, err, stderr.String())
		}
		return out
	}
	grype("db", "import", filepath.Join(dbDir, "vulnerability.db"))
	matchers := map[string]*Matcher{
		"default":            openDB(t, dbDir),
		"memo=off,cache=off": openWith(t, dbDir, Options{CacheBytes: -1, MemoBytes: -1}),
	}

	for _, f := range fixtures(t) {
		if f.Synthetic {
			continue
		}
		t.Run(f.Name, func(t *testing.T) {
			path, _ := filepath.Abs(filepath.Join(fixtureDir, f.File))
			want := grype("sbom:"+path, "-o", "cyclonedx-json")
			for config, m := range matchers {
				got, findings, err := m.Match(context.Background(), fixtureBOM(t, f.Name))
				if err != nil {
					t.Fatal(err)
				}
				if !SameFindings(findings, storedFindings(t, want)) {
					added, resolved := Diff(storedFindings(t, want), findings)
					t.Fatalf("%s: findings differ from the CLI's: extra %v, missing %v", config, added, resolved)
				}
				if a, b := normalize(t, got, true), normalize(t, want, false); !bytes.Equal(a, b) {
					dir := os.Getenv("CROWSNEST_KEEP_DIFF")
					if dir != "" {
						_ = os.WriteFile(filepath.Join(dir, f.Name+".match.json"), a, 0o600)
						_ = os.WriteFile(filepath.Join(dir, f.Name+".cli.json"), b, 0o600)
					}
					t.Fatalf("%s: output differs from the CLI's (set CROWSNEST_KEEP_DIFF=DIR to keep both)", config)
				}
			}
		})
	}
}

// normalize blanks the per-run values and, for Match's output, drops the
// properties it adds, then re-encodes the BOM the way Grype does.
func normalize(t *testing.T, raw []byte, ours bool) []byte {
	t.Helper()
	var b cdx.BOM
	if err := json.Unmarshal(raw, &b); err != nil {
		t.Fatal(err)
	}
	b.SerialNumber, b.Metadata.Timestamp = "", ""
	if b.Vulnerabilities != nil {
		for i := range *b.Vulnerabilities {
			(*b.Vulnerabilities)[i].BOMRef = "" // a random urn:uuid per run
		}
	}
	if ours && b.Metadata.Properties != nil {
		var keep []cdx.Property
		for _, p := range *b.Metadata.Properties {
			if p.Name != PropertyDBBuilt && p.Name != PropertyDBSchema {
				keep = append(keep, p)
			}
		}
		b.Metadata.Properties = nil
		if keep != nil {
			b.Metadata.Properties = &keep
		}
	}
	var buf bytes.Buffer
	enc := cdx.NewBOMEncoder(&buf, cdx.BOMFileFormatJSON)
	enc.SetPretty(true)
	enc.SetEscapeHTML(false)
	if err := enc.EncodeVersion(&b, b.SpecVersion); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
