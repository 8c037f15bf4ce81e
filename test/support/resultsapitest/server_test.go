package resultsapitest

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/crowsnest-dev/crowsnest/test/support/internal/orphan"
	"github.com/crowsnest-dev/crowsnest/test/support/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

const digest = "sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func get(t *testing.T, s *Server, path string) int {
	t.Helper()
	resp, err := s.Client().Get(s.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

func TestStartCloseRestart(t *testing.T) {
	srv := Start(t)
	srv.PutReport(t, digest, nil)
	if code := get(t, srv, "/api/v1/reports/"+digest); code != http.StatusOK {
		t.Fatalf("GET report: HTTP %d, want 200", code)
	}

	srv.Close()
	resp, err := srv.Client().Get(srv.URL + "/healthz")
	if err == nil {
		_ = resp.Body.Close()
		t.Fatalf("API still answers after Close: HTTP %d", resp.StatusCode)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("after Close: %v, want connection refused", err)
	}
	srv.Close() // a second Close is a no-op

	srv.Restart()
	if code := get(t, srv, "/api/v1/reports/"+digest); code != http.StatusOK {
		t.Fatalf("GET after Restart: HTTP %d, want 200 (same database)", code)
	}
	srv.Restart() // restarts a running API too
	if code := get(t, srv, "/api/v1/reports/"+digest); code != http.StatusOK {
		t.Fatalf("GET after a second Restart: HTTP %d, want 200", code)
	}
}

// The token is enforced, and neither it nor the database URL is on the
// process's command line, which every local user can read.
func TestSecretsNotOnCommandLine(t *testing.T) {
	srv := Start(t)
	req, _ := http.NewRequest(http.MethodPut, srv.URL+"/api/v1/reports/"+digest, bytes.NewReader(SmallBOM(digest)))
	req.Header.Set("Authorization", "Bearer not-"+srv.Token)
	req.Header.Set("Content-Type", "application/vnd.cyclonedx+json")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
		t.Fatalf("PUT with a wrong token: HTTP %d, want 401 or 403", resp.StatusCode)
	}
	srv.PutReport(t, digest, nil)

	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", srv.proc.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	for name, secret := range map[string]string{"token": srv.Token, "database URL": srv.DatabaseURL} {
		if strings.Contains(string(cmdline), secret) {
			t.Errorf("the %s is on the command line: %q", name, cmdline)
		}
	}
}

func TestWithMaxBOMBytes(t *testing.T) {
	srv := Start(t, WithMaxBOMBytes(100))
	req, _ := http.NewRequest(http.MethodPut, srv.URL+"/api/v1/reports/"+digest, bytes.NewReader(SmallBOM(digest)))
	req.Header.Set("Authorization", "Bearer "+srv.Token)
	req.Header.Set("Content-Type", "application/vnd.cyclonedx+json")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("PUT of %d bytes over a 100-byte limit: HTTP %d, want 413", len(SmallBOM(digest)), resp.StatusCode)
	}
}

// The test's own CROWSNEST_* settings do not reach the child.
func TestEnvironmentNotInherited(t *testing.T) {
	t.Setenv("CROWSNEST_READ_AUTH", "kubernetes")
	t.Setenv("CROWSNEST_ADMIN_TOKEN_FILE", "/nonexistent")
	srv := Start(t)
	srv.PutReport(t, digest, nil)
	if code := get(t, srv, "/api/v1/reports/"+digest); code != http.StatusOK {
		t.Fatalf("GET report: HTTP %d, want 200 (reads open)", code)
	}
}

// A test process killed by SIGKILL (as `go test -timeout` ends one) leaves
// no results-api running.
func TestDiesWithItsProcess(t *testing.T) {
	if orphan.IsChild() {
		srv := Start(t)
		if get(t, srv, "/healthz") != http.StatusOK {
			t.Fatal("not serving")
		}
		orphan.Report(orphan.Children())
		return
	}
	orphan.Check(t, "TestDiesWithItsProcess")
}
