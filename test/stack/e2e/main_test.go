package e2e

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/test/stack"
)

// shared is the stack all end-to-end tests run on: starting one costs
// about half a minute, so the tests share it and each works in its own
// namespace.
var shared *stack.Stack

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// A stop (SIGTERM, SIGINT) while the stack starts cancels the start,
	// which stops what it started; once up, CloseOnSignal closes it.
	ctx, stopStart := signal.NotifyContext(ctx, syscall.SIGTERM, os.Interrupt)
	defer stopStart()
	level := slog.LevelWarn
	if os.Getenv("CROWSNEST_E2E_VERBOSE") != "" {
		level = slog.LevelInfo
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	o := stack.Options{
		ClusterOnly:   os.Getenv("CROWSNEST_E2E_CLUSTER_ONLY") != "",
		RequireGoDemo: true,
		OnImageID:     imageIDs.record,
		RetryBackoff:  5 * time.Second,
		JobTTL:        2 * time.Minute,
		StuckGrace:    20 * time.Second,
		StateDir:      os.Getenv("CROWSNEST_E2E_STATE_DIR"),
		Namespaces:    append([]string{"e2e-scan", "e2e-fail", "e2e-rescan", "e2e-resilience", "e2e-trust", "e2e-wave", "e2e-outage", "e2e-matcher", "e2e-notify", "e2e-node", "e2e-node-pull"}, append(clusterScannerNamespaces, benchNamespaces()...)...),
	}
	start := time.Now()
	s, err := stack.Start(ctx, o, log)
	if err != nil {
		fmt.Fprintln(os.Stderr, "start stack:", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "stack up in %s (state %s)\n", time.Since(start).Round(time.Millisecond), s.Options.StateDir)
	shared = s
	stopStart()
	stop := s.CloseOnSignal()
	code := m.Run()
	// Closed before the watch ends: a SIGTERM while the stack closes
	// waits for that close (it runs once) instead of killing the binary
	// with the node half torn down.
	s.Close()
	stop()
	return code
}

// imageIDs remembers when each Pod got its imageIDs.
var imageIDs = &podTimes{at: map[string]time.Time{}}

type podTimes struct {
	mu sync.Mutex
	at map[string]time.Time // namespace/name → time
}

func (p *podTimes) record(ns, name string, at time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.at[ns+"/"+name]; !ok {
		p.at[ns+"/"+name] = at
	}
}

func (p *podTimes) get(ns, name string) (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	t, ok := p.at[ns+"/"+name]
	return t, ok
}

// needFull skips nothing: a test that needs the services fails when the
// stack runs cluster-only, so a partial stack never passes silently.
func needFull(t *testing.T) {
	t.Helper()
	if shared.API == nil {
		t.Fatal("this test needs the full stack; unset CROWSNEST_E2E_CLUSTER_ONLY")
	}
}

// eventually polls cond every 200ms until it returns nil or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not true after %s: %v", what, timeout, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
