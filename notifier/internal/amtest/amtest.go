// Package amtest runs a real Alertmanager for the notifier's tests. It
// builds cmd/alertmanager from the module proxy through the tool module
// next to it (Alertmanager's dependencies stay out of the notifier's
// go.mod) into the user cache, once, and runs it on a loopback port with
// clustering off.
package amtest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// Version is the Alertmanager the tool module pins.
const Version = "v0.28.1"

// Binary builds Alertmanager (or reuses the cached build) and returns its
// path.
func Binary(t testing.TB) string {
	t.Helper()
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	bin := filepath.Join(cache, "crowsnest", "alertmanager-"+Version)
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	_, self, _, _ := runtime.Caller(0)
	// -trimpath with CGO_ENABLED=0, the binaries' flags: the standard
	// library and what else it shares with them compile once (512 compiles
	// on a cache that holds the notifier's build, 305 with these flags).
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, "github.com/prometheus/alertmanager/cmd/alertmanager")
	cmd.Dir = filepath.Join(filepath.Dir(self), "tool")
	cmd.Env = append(os.Environ(), "GOWORK=off", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build alertmanager %s: %v\n%s", Version, err, out)
	}
	return bin
}

// Start runs Alertmanager with a configuration that sends every alert to
// webhookURL, until the test ends; it returns the base URL.
func Start(t testing.TB, webhookURL string) string {
	t.Helper()
	bin := Binary(t)
	dir := t.TempDir()
	conf := filepath.Join(dir, "alertmanager.yml")
	cfg := fmt.Sprintf(`route: {receiver: hook, group_by: ['...'], group_wait: 0s, group_interval: 1s, repeat_interval: 1h}
receivers:
- name: hook
  webhook_configs: [{url: %q, send_resolved: false}]
`, webhookURL)
	if err := os.WriteFile(conf, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	cmd := exec.Command(bin, "--config.file="+conf, "--storage.path="+dir, "--web.listen-address="+addr,
		"--cluster.listen-address=", "--log.level=warn")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	base := "http://" + addr
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/-/ready", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("alertmanager on %s not ready after 30s", addr)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
