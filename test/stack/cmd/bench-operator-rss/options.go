package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/crowsnest-dev/crowsnest/test/support"
)

// Options configure the benchmark; every field is a flag.
type Options struct {
	Scenarios       []string
	Out             string
	StateDir        string // logs, kubeconfig, binaries; a temp dir removed on exit when empty
	Root            string // repository root (holds go.work)
	OperatorBin     string // the current tree's operator; built when empty
	BaseOperatorBin string // the operator at BaseCommit; built when empty
	BaseCommit      string
	ResultsAPIBin   string
	Compare         bool
	Settle          time.Duration
	Idle            time.Duration
	Reconciles      int
	Workers         int
	ScanWorkers     int
	ScannerMode     string // auto, cluster or namespace
	MaxScans        int
	LatencyChanges  int
	ScanTimeout     time.Duration
	GoMemLimit      string
	Pods            int // override of the scenario's size (0: its default)
	Namespaces      int
	Digests         int
	Profile         bool // scan scenarios: save the operator's pprof profiles next to its log
}

// BindFlags registers every option on fs.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	fs.Func("scenario", "comma-separated scenarios: 10k, 100k, per-namespace, smoke (default 10k)", func(v string) error {
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				o.Scenarios = append(o.Scenarios, s)
			}
		}
		return nil
	})
	fs.StringVar(&o.Out, "out", "dist/bench-operator-rss.md", "Markdown report (a relative path is taken from the repository root)")
	fs.StringVar(&o.StateDir, "state-dir", "", "keep logs, kubeconfig and binaries here (default: a temp dir, removed at exit)")
	fs.StringVar(&o.OperatorBin, "operator-bin", "", "operator binary under test (default: go build the current tree's operator/cmd)")
	fs.StringVar(&o.BaseOperatorBin, "base-operator-bin", "", "operator binary to compare with (default: build --base-commit from git archive)")
	fs.StringVar(&o.BaseCommit, "base-commit", "2cffb33", "commit whose operator the 10k scenario compares with")
	fs.StringVar(&o.ResultsAPIBin, "results-api-bin", "", "results-api binary (default: go build the current tree's results-api)")
	fs.BoolVar(&o.Compare, "compare", true, "10k: also run the --base-commit operator and print new/old ratios")
	fs.DurationVar(&o.Settle, "settle", 3*time.Minute, "10k: how long RSS is sampled after the initial sync (settled = median of its last 30s)")
	fs.DurationVar(&o.Idle, "idle", time.Minute, "idle window over which CPU seconds and reconciles are counted")
	fs.IntVar(&o.Reconciles, "reconciles", 5, "10k: full reconciles triggered through the requested-at annotation")
	fs.IntVar(&o.Workers, "workers", 16, "parallel API requests while creating Pods and namespaces")
	fs.IntVar(&o.ScanWorkers, "scan-workers", 8, "parallel instant scans (report upload + Job status)")
	fs.StringVar(&o.ScannerMode, "scanner-mode", "auto", "100k: cluster (one ClusterScanner), namespace (a Scanner per namespace) or auto (cluster when its CRD is there)")
	fs.IntVar(&o.MaxScans, "max-concurrent-scans", 50, "operator --max-concurrent-scans (passed only if the binary has it) and each Scanner's spec.maxConcurrentScans")
	fs.IntVar(&o.LatencyChanges, "latency-changes", 50, "100k: Pod status changes to an unscanned digest timed until their Job exists")
	fs.DurationVar(&o.ScanTimeout, "scan-timeout", time.Hour, "longest wait for every digest to be scanned")
	fs.StringVar(&o.GoMemLimit, "gomemlimit", "", "GOMEMLIMIT for the operator process (default: unset, as without a chart)")
	fs.IntVar(&o.Pods, "pods", 0, "override the scenario's Pod count")
	fs.IntVar(&o.Namespaces, "namespaces", 0, "override the scenario's namespace count")
	fs.IntVar(&o.Digests, "digests", 0, "override the scenario's distinct digests (even)")
	fs.BoolVar(&o.Profile, "profile", false, "scan scenarios: serve the operator's pprof on loopback and save, next to its log (see --state-dir), a CPU profile of 60 s of scanning and heap profiles when all is scanned and when settled")
}

// Complete fills defaults and checks the options.
func (o *Options) Complete() error {
	if len(o.Scenarios) == 0 {
		o.Scenarios = []string{"10k"}
	}
	var errs []error
	for _, s := range o.Scenarios {
		if !slices.Contains([]string{"10k", "100k", "per-namespace", "smoke"}, s) {
			errs = append(errs, fmt.Errorf("--scenario %q: want 10k, 100k, per-namespace or smoke", s))
		}
	}
	if !slices.Contains([]string{"auto", "cluster", "namespace"}, o.ScannerMode) {
		errs = append(errs, fmt.Errorf("--scanner-mode %q: want auto, cluster or namespace", o.ScannerMode))
	}
	if o.Digests%2 != 0 {
		errs = append(errs, errors.New("--digests must be even (each Pod runs one of each half)"))
	}
	if o.Workers < 1 || o.ScanWorkers < 1 || o.Reconciles < 0 || o.LatencyChanges < 0 {
		errs = append(errs, errors.New("--workers and --scan-workers must be >= 1; --reconciles and --latency-changes >= 0"))
	}
	if o.MaxScans < 1 || o.MaxScans > 50 {
		errs = append(errs, errors.New("--max-concurrent-scans must be 1..50 (the Scanner CRD's bound)"))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	root, err := support.RepoRoot()
	if err != nil {
		return err
	}
	o.Root = root
	if !filepath.IsAbs(o.Out) {
		o.Out = filepath.Join(root, o.Out)
	}
	return nil
}

// Size is one scenario's workload.
type Size struct {
	Pods, Namespaces, Digests int
	Reports                   bool // every digest has a report before the operator starts
}

// scenarioSize returns the default size of a scenario, with the --pods,
// --namespaces and --digests overrides applied.
func (o *Options) scenarioSize(name string) Size {
	var s Size
	switch name {
	case "10k":
		s = Size{Pods: 10000, Namespaces: 1, Digests: 500, Reports: true}
	case "100k":
		s = Size{Pods: 100000, Namespaces: 2000, Digests: 5000}
	case "per-namespace":
		// 40 Pods per namespace: each digest runs in 8 namespaces, so a
		// Job per (Scanner, digest) would be 40,000 Jobs.
		s = Size{Pods: 20000, Namespaces: 500, Digests: 5000}
	case "smoke-10k":
		s = Size{Pods: 200, Namespaces: 1, Digests: 40, Reports: true}
	case "smoke-100k":
		s = Size{Pods: 200, Namespaces: 8, Digests: 40}
	case "smoke-per-namespace":
		s = Size{Pods: 200, Namespaces: 10, Digests: 20}
	}
	if strings.HasPrefix(name, "smoke") {
		return s
	}
	if o.Pods > 0 {
		s.Pods = o.Pods
	}
	if o.Namespaces > 0 {
		s.Namespaces = o.Namespaces
	}
	if o.Digests > 0 {
		s.Digests = o.Digests
	}
	return s
}

func writeFile(path, content string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(content), 0o644)
}
