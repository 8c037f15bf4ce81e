package stack

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/crowsnest-dev/crowsnest/test/stack/internal/proc"
)

// buildGoDemo compiles the Go demo program (hack/tools/grype/testdata/
// gobinary, which links old golang.org/x modules) into dir. Its build info
// is what Grype matches.
func buildGoDemo(ctx context.Context, root, dir string) (string, error) {
	src := filepath.Join(root, "hack", "tools", "grype", "testdata", "gobinary")
	if _, err := os.Stat(filepath.Join(src, "go.mod")); err != nil {
		return "", fmt.Errorf("go demo source: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	out := filepath.Join(dir, "vulnerable-app")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w -buildid=", "-o", out, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOWORK=off", "CGO_ENABLED=0", "GOFLAGS=-mod=mod", "GOOS=linux", "GOARCH=amd64")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", src, err, b)
	}
	return out, nil
}

// freePort is a port outside the kernel's ephemeral range (proc.FreePort).
func freePort() (int, error) { return proc.FreePort() }
