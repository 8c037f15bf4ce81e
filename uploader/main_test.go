package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/test/support"

	"github.com/crowsnest-dev/crowsnest/test/support/pgtest"
)

// The integration tests run the uploader in-process (run) against a real
// results-api (resultsapitest: its binary on a throwaway Postgres).
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// fixtureDir holds real Grype CycloneDX output (make fixtures).
const fixtureDir = "../results-api/testdata/grype"

type fixtureEntry struct {
	Name, File, Image, Digest string
	Findings, Fixable         int
	Synthetic                 bool
	Counts                    map[string]int
}

func loadFixtures(t *testing.T) []fixtureEntry {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(fixtureDir, "manifest.json"))
	if err != nil {
		t.Fatalf("fixtures missing (run make fixtures): %v", err)
	}
	var m struct{ Fixtures []fixtureEntry }
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m.Fixtures
}

func fixture(t *testing.T, name string) fixtureEntry {
	t.Helper()
	for _, f := range loadFixtures(t) {
		if f.Name == name {
			return f
		}
	}
	t.Fatalf("no fixture %q in manifest.json", name)
	return fixtureEntry{}
}

// countMsg counts the log lines whose msg is msg.
func countMsg(t *testing.T, b *support.Buffer, msg string) int {
	t.Helper()
	n := 0
	for _, l := range b.JSONLines(t) {
		if l["msg"] == msg {
			n++
		}
	}
	return n
}

// invocation is one uploader run's arguments.
type invocation struct {
	api, bom, digest, image, tokenFile string
	extra                              []string
}

func tokenFile(t *testing.T, token string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(p, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func (in invocation) args() []string {
	a := []string{"--api-url", in.api, "--bom-file", in.bom, "--digest", in.digest, "--token-file", in.tokenFile,
		"--timeout", "10s", "--deadline", "60s", "--backoff-base", "20ms", "--backoff-max", "200ms"}
	if in.image != "" {
		a = append(a, "--image", in.image)
	}
	return append(a, in.extra...)
}

// runUploader runs the uploader with a bound on its wall time.
func runUploader(t *testing.T, in invocation, logs *support.Buffer) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if logs == nil {
		logs = &support.Buffer{}
	}
	code := run(ctx, in.args(), func(string) string { return "" }, logs)
	t.Logf("uploader exit %d, logs:\n%s", code, logs.String())
	return code
}
