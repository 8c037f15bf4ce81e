package e2echart

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/test/stack"
)

// cluster is the stack the chart is installed into (stack.Options.Chart):
// the real node as the only node, with the project's images in its
// registry and Postgres for Pods.
var cluster *stack.Stack

// EnvNoNetPol set to 1 runs the suite without the NetworkPolicy enforcer:
// the network policies step then fails (the tenant's probe reaches NATS),
// which shows the step detects a cluster that does not enforce them.
const EnvNoNetPol = "CROWSNEST_E2E_NO_NETPOL"

// EnvRun turns the suite on (make e2e-chart); make e2e, which runs every
// package of the module, leaves it out: it needs its own stack.
const EnvRun = "CROWSNEST_E2E_CHART"

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if os.Getenv(EnvRun) == "" {
		fmt.Fprintf(os.Stderr, "the chart suite runs with make e2e-chart (%s=1); skipped\n", EnvRun)
		return 0
	}
	// kube-proxy may be held by another stack on this machine for a while:
	// Start waits for it.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
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
	start := time.Now()
	s, err := stack.Start(ctx, stack.Options{Chart: true, NetworkPolicies: os.Getenv(EnvNoNetPol) == "", HoldBackAdvisories: true, StateDir: os.Getenv("CROWSNEST_E2E_STATE_DIR")}, log)
	if err != nil {
		fmt.Fprintln(os.Stderr, "start the chart's cluster:", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "cluster up in %s (state %s, registry %s)\n", time.Since(start).Round(time.Millisecond), s.Options.StateDir, s.ImageRegistry())
	cluster = s
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
