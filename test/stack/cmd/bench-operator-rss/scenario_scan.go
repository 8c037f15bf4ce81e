package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crowsnest-dev/crowsnest/test/stack/internal/proc"
)

// scanRun is what the operator did in a scan scenario.
type scanRun struct {
	Mode             string // "ClusterScanner" or "Scanner per namespace"
	MaxFlag          bool   // --max-concurrent-scans was passed
	Running          int    // distinct digests the Pods run
	JobsDone         time.Duration
	AllScanned       time.Duration
	Jobs             jobCounts
	MetricJobs       float64
	Rows             []row
	Settled          int64
	HWM, PeakSampled int64
	HeapInuse        float64
	Idle             idleStats
	Latency          []time.Duration
	Exit             error
	Scan             scanCost // start → all scanned
}

// scanCost is what scanning everything cost the operator: CPU seconds and
// reconciles per controller, from its start until every Scanner's status
// said all scanned.
type scanCost struct {
	CPU                     float64
	Jobs                    int
	Scanner, ClusterScanner float64
}

// scanScenario: Pods whose digests have no report; the operator creates
// scan Jobs and the harness completes each one at once (instant scans).
func (b *bench) scanScenario(ctx context.Context, name string, size Size, mode string, changes int, idle time.Duration) (sec *section, err error) {
	bin, err := b.binary(ctx, "current")
	if err != nil {
		return nil, err
	}
	flags, err := operatorFlags(ctx, bin)
	if err != nil {
		return nil, err
	}
	be, err := b.startBackend(ctx, name)
	if err != nil {
		return nil, err
	}
	defer be.Stop()
	if mode == "auto" {
		mode = "namespace"
		if be.ClusterScannerCRD {
			mode = "cluster"
		}
	}
	l := layout{size}
	r := scanRun{Mode: "Scanner per namespace", Running: l.running()}
	defer func() { sec = scanSection(name, size, r) }()
	if err := createNamespaces(ctx, be.Clientset, l.namespaces(), b.o.Workers); err != nil {
		return nil, err
	}
	if err := b.createPods(ctx, be.Clientset, l); err != nil {
		return nil, err
	}
	if mode == "cluster" {
		r.Mode = "ClusterScanner"
		if !be.ClusterScannerCRD {
			return nil, errors.New("--scanner-mode=cluster: operator/config/crd/bases has no ClusterScanner CRD (run make generate-operator)")
		}
		if err := createClusterScanner(ctx, be.Client, b.o.MaxScans); err != nil {
			return nil, err
		}
	} else if err := parallel(ctx, size.Namespaces, b.o.Workers, nil, func(ctx context.Context, i int) error {
		return createScanner(ctx, be.Client, l.namespaces()[i], b.o.MaxScans)
	}); err != nil {
		return nil, err
	}
	b.logf("%s: %s; %d Pods running %d digests in %d namespaces", name, r.Mode, size.Pods, r.Running, size.Namespaces)

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	player := newScanPlayer(be.Clientset, be.API.URL(), be.Token)
	if err := player.Run(runCtx, b.o.ScanWorkers); err != nil {
		return nil, err
	}
	var extra []string
	if flags["max-concurrent-scans"] {
		extra, r.MaxFlag = append(extra, fmt.Sprintf("--max-concurrent-scans=%d", b.o.MaxScans)), true
	}
	pprofURL := ""
	if b.o.Profile && flags["pprof-bind-address"] {
		port, err := proc.FreePort()
		if err != nil {
			return nil, err
		}
		pprofURL = fmt.Sprintf("http://127.0.0.1:%d", port)
		extra = append(extra, fmt.Sprintf("--pprof-bind-address=127.0.0.1:%d", port))
	}
	p, err := b.startOp(ctx, be, name+"-current", bin, extra)
	if err != nil {
		return nil, err
	}
	if p.PprofURL = pprofURL; pprofURL != "" {
		go b.profileScanning(runCtx, p, player)
	}
	defer func() {
		r.HWM, r.PeakSampled = p.Samples.Peak()
		r.Jobs = player.Counts()
		r.Exit = p.Stop()
		err = errors.Join(err, r.Exit)
	}()
	if err := b.waitScanned(ctx, be, p, player, l, &r); err != nil {
		return nil, err
	}
	// Quiet for 15 s before the idle window: the last status writes settle.
	if err := sleep(ctx, p, 15*time.Second); err != nil {
		return nil, err
	}
	r.Idle, err = b.idleWindow(ctx, p, idle)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	r.Settled = medianRSS(p.Samples.Between(now.Add(-30*time.Second), now))
	if m, err := p.Scrape(ctx); err == nil {
		r.HeapInuse = m.Sum("go_memstats_heap_inuse_bytes")
	}
	r.Rows = append(r.Rows, b.row(ctx, p, "settled"))
	if p.PprofURL != "" {
		if err := p.SaveProfile(ctx, "heap", "settled-heap"); err != nil {
			b.logf("save heap profile: %v", err)
		}
	}
	if r.Latency, err = b.podToJob(ctx, be, p, player, l, changes); err != nil {
		return nil, err
	}
	want := r.Running + changes
	if err := waitFor(ctx, p, time.Minute, func() (bool, error) { return player.Counts().Completed >= want, nil }); err != nil {
		return nil, fmt.Errorf("latency Jobs not completed: %w", err)
	}
	if m, err := p.Scrape(ctx); err == nil {
		r.MetricJobs = m.Sum("crowsnest_operator_jobs_created_total")
	}
	return nil, checkJobs(player.Counts(), want)
}

// checkJobs holds the scan scenarios' invariants: one Job per digest.
func checkJobs(j jobCounts, want int) error {
	var errs []error
	if j.Created != want || j.Digests != want {
		errs = append(errs, fmt.Errorf("%d scan Jobs for %d digests, want %d for %d", j.Created, j.Digests, want, want))
	}
	if len(j.Duplicates) > 0 {
		errs = append(errs, fmt.Errorf("%d duplicate Jobs, e.g. %s", len(j.Duplicates), j.Duplicates[0]))
	}
	for _, e := range j.Errors[:min(3, len(j.Errors))] {
		errs = append(errs, fmt.Errorf("instant scan: %w", e))
	}
	return errors.Join(errs...)
}

// waitScanned waits until every running digest's Job has been completed
// and every Scanner's status says all its images are scanned.
func (b *bench) waitScanned(ctx context.Context, be *backend, p *operatorProcess, player *scanPlayer, l layout, r *scanRun) error {
	deadline := p.Started.Add(b.o.ScanTimeout)
	next := time.Now().Add(30 * time.Second)
	for {
		c := player.Counts()
		if c.Completed >= r.Running && r.JobsDone == 0 {
			r.JobsDone = c.LastDone.Sub(p.Started)
			b.logf("all %d digests' Jobs completed %v after the operator started", r.Running, dur(r.JobsDone))
		}
		if r.JobsDone > 0 {
			t, err := totals(ctx, be.Client)
			if err == nil && t.done(l.Namespaces) {
				r.AllScanned = time.Since(p.Started)
				r.Rows = append(r.Rows, b.row(ctx, p, "all scanned"))
				r.Scan = scanCost{CPU: p.Samples.Now().CPU, Jobs: c.Created}
				if err := p.SaveMetrics(ctx, "all-scanned"); err != nil {
					b.logf("save metrics: %v", err)
				}
				if p.PprofURL != "" {
					if err := p.SaveProfile(ctx, "heap", "all-scanned-heap"); err != nil {
						b.logf("save heap profile: %v", err)
					}
				}
				if m, err := p.Scrape(ctx); err == nil {
					r.Scan.Scanner = m.Sum("controller_runtime_reconcile_total", `controller="scanner"`)
					r.Scan.ClusterScanner = m.Sum("controller_runtime_reconcile_total", `controller="clusterscanner"`)
				}
				return nil
			}
			if time.Now().After(next) {
				b.logf("status: %v (err %v)", t, err)
			}
		}
		if time.Now().After(next) {
			r.Rows = append(r.Rows, b.row(ctx, p, fmt.Sprintf("%d Jobs created, %d completed", c.Created, c.Completed)))
			next = next.Add(30 * time.Second)
		}
		if len(c.Errors) > 0 {
			return fmt.Errorf("instant scans failing: %w", c.Errors[0])
		}
		// An operator that does not serve the chosen kind (an older build
		// and a ClusterScanner) never creates a Job: fail fast.
		if c.Created == 0 && time.Since(p.Started) > 2*time.Minute {
			t, _ := totals(ctx, be.Client)
			return fmt.Errorf("no scan Job 2m after the operator started (%s; does this build serve a %s?)", t, r.Mode)
		}
		if time.Now().After(deadline) {
			t, _ := totals(ctx, be.Client)
			return fmt.Errorf("not all scanned after %v: %d Jobs created, %d completed; %v", b.o.ScanTimeout, c.Created, c.Completed, t)
		}
		if err := sleep(ctx, p, 2*time.Second); err != nil {
			return err
		}
	}
}

// idleWindow counts CPU seconds, reconciles and timed requeues over d.
func (b *bench) idleWindow(ctx context.Context, p *operatorProcess, d time.Duration) (idleStats, error) {
	m0, err := p.Scrape(ctx)
	if err != nil {
		return idleStats{}, err
	}
	s0 := p.Samples.Now()
	if err := sleep(ctx, p, d); err != nil {
		return idleStats{}, err
	}
	m1, err := p.Scrape(ctx)
	if err != nil {
		return idleStats{}, err
	}
	s1 := p.Samples.Now()
	st := idleStats{Window: s1.At.Sub(s0.At), CPU: s1.CPU - s0.CPU,
		Reconciles:    m1.Sum("controller_runtime_reconcile_total") - m0.Sum("controller_runtime_reconcile_total"),
		TimedRequeues: m1.Sum("crowsnest_operator_timed_requeues_total") - m0.Sum("crowsnest_operator_timed_requeues_total")}
	b.logf("idle %v: %.2f CPU s, %v reconciles, %v timed requeues", dur(st.Window), st.CPU, st.Reconciles, st.TimedRequeues)
	return st, nil
}

// podToJob gives n Pods, one at a time, a status with a new, unscanned
// digest and times from that status write to the Job's appearance on the
// harness's watch.
func (b *bench) podToJob(ctx context.Context, be *backend, p *operatorProcess, player *scanPlayer, l layout, n int) ([]time.Duration, error) {
	var out []time.Duration
	nss := l.namespaces()
	for i := range n {
		ns := nss[i*len(nss)/max(n, 1)]
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("latency-%03d", i), Namespace: ns}}
		pod.Spec.Containers = []corev1.Container{{Name: "c0", Image: "ghcr.io/bench/app-0:1"}}
		created, err := be.Clientset.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			return out, err
		}
		d := digest(1_000_000 + i)
		job := player.WaitJob(d)
		t0 := time.Now()
		if err := setRunning(ctx, be.Clientset, created, d); err != nil {
			return out, err
		}
		select {
		case <-job:
			out = append(out, time.Since(t0))
		case <-time.After(30 * time.Second):
			return out, fmt.Errorf("no Job for Pod %s/%s (digest %s) within 30s", ns, pod.Name, d)
		case <-p.done:
			return out, errStopped
		case <-ctx.Done():
			return out, ctx.Err()
		}
		if err := sleep(ctx, p, 200*time.Millisecond); err != nil {
			return out, err
		}
	}
	if n > 0 {
		b.logf("pod status → Job: p50 %v p99 %v max %v over %d changes", percentile(out, 50), percentile(out, 99), percentile(out, 100), n)
	}
	return out, nil
}

// profileScanning saves a CPU profile of the operator's first 60 s of
// scanning (from the first scan Job the harness sees).
func (b *bench) profileScanning(ctx context.Context, p *operatorProcess, player *scanPlayer) {
	for player.Counts().Created == 0 {
		if err := sleep(ctx, p, time.Second); err != nil {
			return
		}
	}
	if err := p.SaveProfile(ctx, "profile?seconds=60", "scanning-cpu"); err != nil && ctx.Err() == nil {
		b.logf("save CPU profile: %v", err)
	}
}
