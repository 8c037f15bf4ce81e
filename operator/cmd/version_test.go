package main

import (
	"bytes"
	"context"
	"flag"
	"runtime"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/crowsnest-dev/crowsnest/test/support/metricsref"
)

// TestVersionFlag: --version prints the build and returns nil (exit 0)
// before any option is validated or the cluster is contacted.
func TestVersionFlag(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"--version"}, func(string) string { return "" }, &stdout, &stderr, noKube); err != nil {
		t.Fatalf("run --version: %v", err)
	}
	got := strings.TrimSpace(stdout.String())
	if !strings.HasPrefix(got, "operator dev (revision ") || !strings.HasSuffix(got, ", "+runtime.Version()+")") {
		t.Errorf("--version printed %q", got)
	}
}

// TestBuildInfoMetric: the manager's registry holds crowsnest_build_info = 1
// with the version, revision and goversion labels.
func TestBuildInfoMetric(t *testing.T) { metricsref.CheckBuildInfo(t, metrics.Registry) }

// TestZapFlags: controller-runtime's --zap-* flags are accepted and win
// over --log-format and --log-level.
func TestZapFlags(t *testing.T) {
	var o Options
	fs := boundFlags(&o)
	if err := fs.Parse([]string{"--log-format=json", "--log-level=error", "--zap-encoder=console", "--zap-log-level=debug", "--zap-time-encoding=iso8601"}); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	opts, err := o.loggerOptions(&out)
	if err != nil {
		t.Fatal(err)
	}
	zap.New(opts...).V(1).Info("hello", "k", "v")
	if s := out.String(); !strings.Contains(s, "DEBUG\thello") || strings.HasPrefix(s, "{") {
		t.Errorf("want a console-encoded debug line, got %q", s)
	}

	out.Reset()
	o = Options{}
	fs = boundFlags(&o)
	if err := fs.Parse([]string{"--log-level=error"}); err != nil {
		t.Fatal(err)
	}
	if opts, err = o.loggerOptions(&out); err != nil {
		t.Fatal(err)
	}
	log := zap.New(opts...)
	log.Info("dropped")
	log.Error(nil, "kept")
	if s := out.String(); strings.Contains(s, "dropped") || !strings.Contains(s, `"msg":"kept"`) {
		t.Errorf("without --zap-* flags, --log-format and --log-level apply: %q", s)
	}
}

func boundFlags(o *Options) *flag.FlagSet {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	o.BindFlags(fs)
	return fs
}
