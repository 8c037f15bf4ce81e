package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// scanSection renders a scan scenario.
func scanSection(name string, size Size, r scanRun) *section {
	s := &section{Title: fmt.Sprintf("%s: %d Pods in %d namespaces, %d digests, no reports, %s", name, size.Pods, size.Namespaces, size.Digests, r.Mode)}
	capNote := "`--max-concurrent-scans` not in this build's --help, not passed"
	if r.MaxFlag {
		capNote = "`--max-concurrent-scans=50`"
	}
	s.linef("%d Pods (2 containers each) in %d namespaces running %d distinct digests (each in ~%d namespaces), none with a report; %s "+
		"(spec maxConcurrentScans 50); operator %s. Instant scans: for each new scan Job the harness uploads a report and marks the Job "+
		"succeeded.\n", size.Pods, size.Namespaces, r.Running, layout{size}.namespacesPerDigest(), r.Mode, capNote)
	if len(r.Rows) > 0 {
		s.linef("| t since start | RSS MiB | RSS 30 s median | heap in use MiB | heap alloc MiB | |")
		s.linef("|---|---|---|---|---|---|")
		for _, x := range r.Rows {
			s.linef("| %s | %s | %s | %s | %s | %s |", dur(x.At), mibi(x.RSS), mibi(x.Median30), mib(x.HeapInuse), mib(x.HeapAlloc), x.Note)
		}
		s.linef("")
	}
	want := r.Running + len(r.Latency)
	s.linef("- start → every digest's Job completed: %s; → every Scanner's status says all scanned: %s", durOrNone(r.JobsDone), durOrNone(r.AllScanned))
	s.linef("- scan Jobs created (seen on a watch): **%d** for %d digests (want %d = distinct digests); duplicates: **%d**; operator's jobs_created_total: %v",
		r.Jobs.Created, r.Jobs.Digests, want, len(r.Jobs.Duplicates), r.MetricJobs)
	if len(r.Jobs.Duplicates) > 0 {
		s.linef("  - e.g. %s", strings.Join(r.Jobs.Duplicates[:min(5, len(r.Jobs.Duplicates))], "; "))
	}
	if c := r.Scan; c.Jobs > 0 {
		s.linef("- scanning it all cost the operator %.1f CPU s (%.2f per Job) and %v Scanner + %v ClusterScanner reconciles (%.1f per Job)",
			c.CPU, c.CPU/float64(c.Jobs), c.Scanner, c.ClusterScanner, (c.Scanner+c.ClusterScanner)/float64(c.Jobs))
	}
	s.linef("- RSS settled (median of the idle window's last 30 s): **%s MiB**; peak %s MiB (VmHWM; highest sample %s MiB); heap in use %s MiB",
		mibi(r.Settled), mibi(r.HWM), mibi(r.PeakSampled), mib(r.HeapInuse))
	s.linef("- idle %v after everything was scanned: %.2f CPU s (%.2f per minute), %v reconciles, %v timed requeues",
		dur(r.Idle.Window), r.Idle.CPU, perMinute(r.Idle), r.Idle.Reconciles, r.Idle.TimedRequeues)
	if n := len(r.Latency); n > 0 {
		s.linef("- Pod status gains an unscanned digest → Job on a watch, %d changes with all Pods present: p50 %v, **p99 %v**, max %v",
			n, percentile(r.Latency, 50).Round(time.Millisecond), percentile(r.Latency, 99).Round(time.Millisecond), percentile(r.Latency, 100).Round(time.Millisecond))
	}
	exit := "exited cleanly on SIGTERM"
	if r.Exit != nil {
		exit = "**did not exit cleanly**: " + r.Exit.Error()
	}
	s.linef("- operator %s\n", exit)
	return s
}

func durOrNone(d time.Duration) string {
	if d <= 0 {
		return "not reached"
	}
	return dur(d)
}

// smoke runs every scenario at tiny sizes, for its invariants only: no
// scan Job when every digest has a report, exactly one Job per digest
// otherwise, and an operator that exits cleanly.
func (b *bench) smoke(ctx context.Context) (*section, error) {
	s := &section{Title: "smoke (tiny sizes: invariants only, the numbers mean nothing)"}
	var errs []error
	add := func(sec *section, err error) {
		if sec != nil {
			s.linef("### %s\n\n%s", sec.Title, sec.String())
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	add(b.syncScenario(ctx, "smoke-10k", b.o.scenarioSize("smoke-10k"), []string{"current"}, 10*time.Second, 10*time.Second, 1))
	if ctx.Err() == nil {
		add(b.scanScenario(ctx, "smoke-100k", b.o.scenarioSize("smoke-100k"), b.o.ScannerMode, 5, 5*time.Second))
	}
	if ctx.Err() == nil {
		add(b.scanScenario(ctx, "smoke-per-namespace", b.o.scenarioSize("smoke-per-namespace"), "namespace", 0, 5*time.Second))
	}
	return s, errors.Join(errs...)
}
