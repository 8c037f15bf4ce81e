package main

import (
	"github.com/crowsnest-dev/crowsnest/api/scan"
	"github.com/crowsnest-dev/crowsnest/test/support"

	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/test/support/resultsapitest"
)

// TestExitCodes runs every failure against the real API and checks the exit
// code, that a rejection is not retried, and that nothing was stored.
func TestExitCodes(t *testing.T) {
	f := fixture(t, "node")
	srv := resultsapitest.Start(t)
	good := filepath.Join(fixtureDir, f.File)
	tok := tokenFile(t, srv.Token)
	notBOM := writeFile(t, `{"matches":[],"source":{"type":"image"}}`) // Grype's native JSON shape, not CycloneDX
	down := resultsapitest.Start(t)
	down.Close()

	for name, tc := range map[string]struct {
		in       invocation
		want     int
		attempts int // upload attempts expected in the logs; -1 = don't check
	}{
		"usage: no digest":      {invocation{api: srv.URL, bom: good, tokenFile: tok}, scan.ExitUsage, 0},
		"report missing":        {invocation{api: srv.URL, bom: filepath.Join(t.TempDir(), "none.json"), digest: f.Digest, tokenFile: tok}, scan.ExitInvalidReport, 0},
		"report not CycloneDX":  {invocation{api: srv.URL, bom: notBOM, digest: f.Digest, tokenFile: tok}, scan.ExitInvalidReport, 0},
		"report over the limit": {invocation{api: srv.URL, bom: good, digest: f.Digest, tokenFile: tok, extra: []string{"--max-bom-bytes", "100"}}, scan.ExitInvalidReport, 0},
		"token file missing":    {invocation{api: srv.URL, bom: good, digest: f.Digest, tokenFile: filepath.Join(t.TempDir(), "nope")}, scan.ExitTokenInvalid, 0},
		"wrong token (403)":     {invocation{api: srv.URL, bom: good, digest: f.Digest, tokenFile: tokenFile(t, "not-the-token")}, scan.ExitRejected, 1},
		"bad digest (400)":      {invocation{api: srv.URL, bom: good, digest: "sha256:NOT-HEX", tokenFile: tok}, scan.ExitRejected, 1},
		"short digest (400)":    {invocation{api: srv.URL, bom: good, digest: "sha256:abc", tokenFile: tok}, scan.ExitRejected, 1},
		"unreachable, attempts": {invocation{api: down.URL, bom: good, digest: f.Digest, tokenFile: tok, extra: []string{"--max-attempts", "3"}}, scan.ExitUnreachable, 3},
		"unreachable, deadline": {invocation{api: down.URL, bom: good, digest: f.Digest, tokenFile: tok, extra: []string{"--max-attempts", "100", "--deadline", "300ms"}}, scan.ExitUnreachable, -1},
	} {
		t.Run(name, func(t *testing.T) {
			logs := &support.Buffer{}
			start := time.Now()
			if code := runUploader(t, tc.in, logs); code != tc.want {
				t.Fatalf("exit %d, want %d", code, tc.want)
			}
			if time.Since(start) > 30*time.Second {
				t.Errorf("took %v", time.Since(start))
			}
			attempts := countMsg(t, logs, "upload attempt failed, retrying") + countMsg(t, logs, "upload attempt failed") + countMsg(t, logs, "upload rejected")
			if tc.attempts >= 0 && attempts != tc.attempts {
				t.Errorf("%d attempts logged, want %d", attempts, tc.attempts)
			}
			if strings.Contains(logs.String(), srv.Token) || strings.Contains(logs.String(), "vulnerabilities") {
				t.Error("logs contain the token or report content")
			}
		})
	}
	if code := getJSON(t, srv, "/api/v1/reports/"+f.Digest, nil); code != http.StatusNotFound {
		t.Fatalf("after failed uploads GET report = %d, want 404 (nothing stored)", code)
	}
}

// TestAPIRejectsOversizedBOM: an API configured with a small BOM limit
// answers 413, which is a rejection (exit 4), not retried.
func TestAPIRejectsOversizedBOM(t *testing.T) {
	f := fixture(t, "alpine")
	srv := resultsapitest.Start(t, resultsapitest.WithMaxBOMBytes(1024))
	logs := &support.Buffer{}
	in := invocation{api: srv.URL, bom: filepath.Join(fixtureDir, f.File), digest: f.Digest, tokenFile: tokenFile(t, srv.Token)}
	if code := runUploader(t, in, logs); code != scan.ExitRejected {
		t.Fatalf("exit %d, want %d", code, scan.ExitRejected)
	}
	if !strings.Contains(logs.String(), `"status":413`) {
		t.Errorf("want a 413 in the logs")
	}
}

// TestStaticBinaryExitCode builds the real binary (CGO off, as the image
// does) and checks that the process exit code is the documented one.
func TestStaticBinaryExitCode(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "uploader")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "--api-url", "http://127.0.0.1:1", "--digest", "sha256:"+strings.Repeat("a", 64),
		"--bom-file", writeFile(t, "not json"), "--token-file", writeFile(t, "t"))
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != scan.ExitInvalidReport {
		t.Fatalf("exit %v, want %d; output %s", err, scan.ExitInvalidReport, out)
	}
	if !strings.Contains(string(out), `"msg":"report invalid"`) {
		t.Errorf("want a JSON log line, got %s", out)
	}
}
