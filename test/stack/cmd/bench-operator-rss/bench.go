package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// bench holds what all scenarios share: the state directory, the binaries
// and the progress log.
type bench struct {
	o        Options
	dir      string
	ownDir   bool
	start    time.Time
	logMu    sync.Mutex
	log      io.Writer
	bins     map[string]string // "current", "base", "results-api"
	builders sync.Mutex
}

func newBench(ctx context.Context, o Options, log io.Writer) (*bench, error) {
	b := &bench{o: o, dir: o.StateDir, log: log, start: time.Now(), bins: map[string]string{}}
	if b.dir == "" {
		d, err := os.MkdirTemp("", "bench-operator-rss-")
		if err != nil {
			return nil, err
		}
		b.dir, b.ownDir = d, true
	} else if err := os.MkdirAll(b.dir, 0o755); err != nil {
		return nil, err
	}
	b.logf("state (logs, kubeconfig): %s", b.dir)
	if o.ResultsAPIBin != "" {
		b.bins["results-api"] = o.ResultsAPIBin
	} else if err := b.goBuild(ctx, "results-api", filepath.Join(o.Root, "results-api"), "./cmd/results-api", nil); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// Close removes the state directory when the bench made it.
func (b *bench) Close() {
	if b.ownDir {
		_ = os.RemoveAll(b.dir)
	}
}

func (b *bench) logf(format string, args ...any) {
	b.logMu.Lock()
	defer b.logMu.Unlock()
	fmt.Fprintf(b.log, "[%6s] %s\n", time.Since(b.start).Round(time.Second), fmt.Sprintf(format, args...))
}

// binary returns the operator binary of a build ("current" or "base"),
// building it on first use.
func (b *bench) binary(ctx context.Context, which string) (string, error) {
	b.builders.Lock()
	defer b.builders.Unlock()
	if bin, ok := b.bins[which]; ok {
		return bin, nil
	}
	switch which {
	case "current":
		if b.o.OperatorBin != "" {
			b.bins[which] = b.o.OperatorBin
			return b.o.OperatorBin, nil
		}
		err := b.goBuild(ctx, "current", filepath.Join(b.o.Root, "operator"), "./cmd", nil)
		return b.bins[which], err
	case "base":
		if b.o.BaseOperatorBin != "" {
			b.bins[which] = b.o.BaseOperatorBin
			return b.o.BaseOperatorBin, nil
		}
		err := b.buildBase(ctx)
		return b.bins[which], err
	}
	return "", fmt.Errorf("unknown build %q", which)
}

// buildBase extracts BaseCommit with `git archive` (no worktree, no
// checkout: the working tree and the index are left alone) and builds its
// operator with the go.work of that commit. The binary is cached per
// commit in the user's cache directory.
func (b *bench) buildBase(ctx context.Context) error {
	rev, err := exec.CommandContext(ctx, "git", "-C", b.o.Root, "rev-parse", "--verify", b.o.BaseCommit+"^{commit}").Output()
	if err != nil {
		return fmt.Errorf("git rev-parse %s: %w", b.o.BaseCommit, err)
	}
	full := strings.TrimSpace(string(rev))
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	bin := filepath.Join(cache, "crowsnest-bench", "operator-"+full[:12])
	if _, err := os.Stat(bin); err == nil {
		b.logf("base operator %s: cached %s", full[:12], bin)
		b.bins["base"] = bin
		return nil
	}
	src, err := os.MkdirTemp("", "opbase-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(src)
	b.logf("extracting %s with git archive into %s", full[:12], src)
	archive := exec.CommandContext(ctx, "sh", "-c", `git -C "$1" archive "$2" | tar -x -C "$3"`, "sh", b.o.Root, full, src)
	if out, err := archive.CombinedOutput(); err != nil {
		return fmt.Errorf("git archive %s: %w\n%s", full, err, out)
	}
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return err
	}
	// The archive has its own go.work; GOWORK=auto finds it there.
	if err := b.goBuildTo(ctx, "base", bin, filepath.Join(src, "operator"), "./cmd", []string{"GOWORK="}); err != nil {
		return err
	}
	b.bins["base"] = bin
	return nil
}

func (b *bench) goBuild(ctx context.Context, name, dir, pkg string, env []string) error {
	bin := filepath.Join(b.dir, "bin", name)
	if err := b.goBuildTo(ctx, name, bin, dir, pkg, env); err != nil {
		return err
	}
	b.bins[name] = bin
	return nil
}

// goBuildTo builds as the Makefile's build targets do (CGO off, trimpath).
func (b *bench) goBuildTo(ctx context.Context, name, bin, dir, pkg string, env []string) error {
	start := time.Now()
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", bin, pkg)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "CGO_ENABLED=0"), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build %s in %s: %w\n%s", name, dir, err, out)
	}
	b.logf("built %s in %v", name, time.Since(start).Round(time.Second))
	return nil
}

// runScenario runs one scenario on a fresh control plane, Postgres and
// results-api, and stops them all before it returns.
func (b *bench) runScenario(ctx context.Context, name string) (*section, error) {
	switch name {
	case "10k":
		builds := []string{"current"}
		if b.o.Compare {
			builds = []string{"base", "current"}
		}
		return b.syncScenario(ctx, "10k", b.o.scenarioSize("10k"), builds, b.o.Settle, b.o.Idle, b.o.Reconciles)
	case "100k":
		return b.scanScenario(ctx, "100k", b.o.scenarioSize("100k"), b.o.ScannerMode, b.o.LatencyChanges, b.o.Idle)
	case "per-namespace":
		return b.scanScenario(ctx, "per-namespace", b.o.scenarioSize("per-namespace"), "namespace", 0, b.o.Idle)
	case "smoke":
		return b.smoke(ctx)
	}
	return nil, fmt.Errorf("unknown scenario %q", name)
}
