package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// syncRun is what one operator build did in the sync scenario.
type syncRun struct {
	Build            string
	Sync             time.Duration // operator start → Scanner status counts every digest scanned
	Rows             []row         // the time series, every 30 s
	Settled          int64         // median VmRSS of the settle window's last 30 s
	HWM, PeakSampled int64
	HeapInuse        float64 // go_memstats_heap_inuse_bytes at the end of the settle window
	HeapAlloc        float64 // go_memstats_heap_alloc_bytes, same moment
	Idle             idleStats
	Reconciles       []reconcileCost
	JobsCreated      float64
	Exit             error
}

// row is one line of a time series.
type row struct {
	At                   time.Duration // since the operator started
	RSS, Median30        int64
	HeapInuse, HeapAlloc float64
	Note                 string
}

// idleStats are counted over an idle window: nothing changes in the
// cluster, so anything the operator does is timed polling.
type idleStats struct {
	Window                    time.Duration
	CPU                       float64 // seconds
	Reconciles, TimedRequeues float64
}

// reconcileCost is one full reconcile asked for through the requested-at
// annotation.
type reconcileCost struct {
	RSSBefore, RSSAfter int64   // median of the 5 s before; highest VmRSS in the 10 s after
	HeapAllocDelta      float64 // go_memstats_heap_alloc_bytes after − before (negative when a GC ran in between)
	Allocated           float64 // go_memstats_alloc_bytes_total after − before: bytes allocated, GC or not
	CPU                 float64 // seconds, over the 10 s after
	Duration            float64 // seconds, from controller_runtime_reconcile_time_seconds
}

func (c reconcileCost) Added() int64 { return c.RSSAfter - c.RSSBefore }

// syncScenario: Pods whose digests all have reports, one Scanner; each
// build starts, syncs, settles, idles and is made to reconcile in full.
func (b *bench) syncScenario(ctx context.Context, name string, size Size, builds []string, settle, idle time.Duration, reconciles int) (*section, error) {
	bins := map[string]string{}
	for _, build := range builds {
		bin, err := b.binary(ctx, build)
		if err != nil {
			return nil, err
		}
		bins[build] = bin
	}
	be, err := b.startBackend(ctx, name)
	if err != nil {
		return nil, err
	}
	defer be.Stop()
	l := layout{size}
	if err := createNamespaces(ctx, be.Clientset, l.namespaces(), b.o.Workers); err != nil {
		return nil, err
	}
	start := time.Now()
	if err := parallel(ctx, size.Digests, 8, nil, func(ctx context.Context, i int) error {
		return putReport(ctx, metricsClient, be.API.URL(), be.Token, digest(i))
	}); err != nil {
		return nil, err
	}
	b.logf("%s: uploaded %d reports in %v", name, size.Digests, time.Since(start).Round(time.Millisecond))
	if err := b.createPods(ctx, be.Clientset, l); err != nil {
		return nil, err
	}
	ns := l.namespaces()[0]
	if err := createScanner(ctx, be.Client, ns, b.o.MaxScans); err != nil {
		return nil, err
	}
	var runs []syncRun
	var errs []error
	for i, build := range builds {
		if i > 0 {
			if err := resetStatus(ctx, be.Client, ns); err != nil {
				return nil, err
			}
		}
		r, err := b.syncRun(ctx, be, name, build, bins[build], l, settle, idle, reconciles)
		runs = append(runs, r)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", build, err))
			if ctx.Err() != nil {
				break
			}
		}
	}
	return syncSection(name, size, settle, runs), errors.Join(errs...)
}

func (b *bench) syncRun(ctx context.Context, be *backend, name, build, bin string, l layout, settle, idle time.Duration, reconciles int) (r syncRun, err error) {
	r.Build = build
	p, err := b.startOp(ctx, be, name+"-"+build, bin, nil)
	if err != nil {
		return r, err
	}
	defer func() {
		r.HWM, r.PeakSampled = p.Samples.Peak()
		r.Exit = p.Stop()
		err = errors.Join(err, r.Exit)
	}()
	ns := l.namespaces()[0]
	want := l.running()
	if err := waitFor(ctx, p, 10*time.Minute, func() (bool, error) {
		t, err := totals(ctx, be.Client)
		return t.Images == want && t.Scanned == want, err
	}); err != nil {
		return r, fmt.Errorf("sync: %w", err)
	}
	r.Sync = time.Since(p.Started)
	synced := time.Now()
	b.logf("%s/%s: synced %d pods, %d digests in %v", name, build, l.Pods, want, dur(r.Sync))
	r.Rows = append(r.Rows, b.row(ctx, p, "synced"))

	idleFrom := synced.Add(settle - min(idle, settle))
	var idleStart sample
	var idleMetrics metrics
	next := synced.Add(30 * time.Second)
	for now := time.Now(); now.Before(synced.Add(settle)); now = time.Now() {
		if idleStart.At.IsZero() && !now.Before(idleFrom) {
			idleMetrics, _ = p.Scrape(ctx)
			idleStart = p.Samples.Now()
		}
		if !now.Before(next) {
			r.Rows = append(r.Rows, b.row(ctx, p, ""))
			next = next.Add(30 * time.Second)
		}
		if err := sleep(ctx, p, time.Second); err != nil {
			return r, err
		}
	}
	end := time.Now()
	m, err := p.Scrape(ctx)
	if err != nil {
		return r, err
	}
	idleEnd := p.Samples.Now()
	r.Idle = idleStats{Window: idleEnd.At.Sub(idleStart.At), CPU: idleEnd.CPU - idleStart.CPU,
		Reconciles:    m.Sum("controller_runtime_reconcile_total") - idleMetrics.Sum("controller_runtime_reconcile_total"),
		TimedRequeues: m.Sum("crowsnest_operator_timed_requeues_total") - idleMetrics.Sum("crowsnest_operator_timed_requeues_total")}
	r.Settled = medianRSS(p.Samples.Between(end.Add(-30*time.Second), end))
	r.HeapInuse, r.HeapAlloc = m.Sum("go_memstats_heap_inuse_bytes"), m.Sum("go_memstats_heap_alloc_bytes")
	r.Rows = append(r.Rows, b.row(ctx, p, "settled"))
	b.logf("%s/%s: settled RSS %s MiB, heap in use %s MiB", name, build, mibi(r.Settled), mib(r.HeapInuse))

	for k := range reconciles {
		c, err := b.fullReconcile(ctx, be, p, ns)
		if err != nil {
			return r, fmt.Errorf("reconcile %d: %w", k+1, err)
		}
		r.Reconciles = append(r.Reconciles, c)
		b.logf("%s/%s: full reconcile %d: +%s MiB RSS, %.3fs", name, build, k+1, mibi(c.Added()), c.Duration)
	}
	r.Rows = append(r.Rows, b.row(ctx, p, "after reconciles"))
	if m, err = p.Scrape(ctx); err == nil {
		r.JobsCreated = m.Sum("crowsnest_operator_jobs_created_total")
	}
	if r.JobsCreated != 0 {
		return r, fmt.Errorf("%v scan Jobs created, want 0: every digest has a report", r.JobsCreated)
	}
	return r, nil
}

// fullReconcile annotates the Scanner and measures what the reconcile
// that follows costs.
func (b *bench) fullReconcile(ctx context.Context, be *backend, p *operatorProcess, ns string) (reconcileCost, error) {
	var c reconcileCost
	if err := sleep(ctx, p, 5*time.Second); err != nil {
		return c, err
	}
	before, err := p.Scrape(ctx)
	if err != nil {
		return c, err
	}
	now := p.Samples.Now()
	c.RSSBefore = medianRSS(p.Samples.Between(now.At.Add(-5*time.Second), now.At))
	if err := requestReconcile(ctx, be.Client, ns); err != nil {
		return c, err
	}
	count := before.Sum("controller_runtime_reconcile_total")
	if err := waitFor(ctx, p, 30*time.Second, func() (bool, error) {
		m, err := p.Scrape(ctx)
		return m.Sum("controller_runtime_reconcile_total") > count, err
	}); err != nil {
		return c, err
	}
	if err := sleep(ctx, p, 10*time.Second); err != nil {
		return c, err
	}
	after, err := p.Scrape(ctx)
	if err != nil {
		return c, err
	}
	end := p.Samples.Now()
	c.RSSAfter = maxRSS(p.Samples.Between(now.At, end.At))
	c.CPU = end.CPU - now.CPU
	c.HeapAllocDelta = after.Sum("go_memstats_heap_alloc_bytes") - before.Sum("go_memstats_heap_alloc_bytes")
	c.Allocated = after.Sum("go_memstats_alloc_bytes_total") - before.Sum("go_memstats_alloc_bytes_total")
	if n := after.Sum("controller_runtime_reconcile_time_seconds_count") - before.Sum("controller_runtime_reconcile_time_seconds_count"); n > 0 {
		c.Duration = (after.Sum("controller_runtime_reconcile_time_seconds_sum") - before.Sum("controller_runtime_reconcile_time_seconds_sum")) / n
	}
	return c, nil
}

// row samples the process now for the time series.
func (b *bench) row(ctx context.Context, p *operatorProcess, note string) row {
	s := p.Samples.Now()
	r := row{At: s.At.Sub(p.Started), RSS: s.RSS, Median30: medianRSS(p.Samples.Between(s.At.Add(-30*time.Second), s.At)), Note: note}
	if m, err := p.Scrape(ctx); err == nil {
		r.HeapInuse, r.HeapAlloc = m.Sum("go_memstats_heap_inuse_bytes"), m.Sum("go_memstats_heap_alloc_bytes")
	}
	b.logf("%s t=%v RSS %s MiB (30s median %s) heap in use %s alloc %s %s", p.Name, dur(r.At), mibi(r.RSS), mibi(r.Median30),
		mib(r.HeapInuse), mib(r.HeapAlloc), note)
	return r
}

// startOp starts a build of the operator against the backend.
func (b *bench) startOp(ctx context.Context, be *backend, name, bin string, extra []string) (*operatorProcess, error) {
	var env []string
	if b.o.GoMemLimit != "" {
		env = append(env, "GOMEMLIMIT="+b.o.GoMemLimit)
	}
	args := append([]string{"--results-api-url=" + be.API.URL(), "--uploader-image=ghcr.io/crowsnest-dev/uploader:bench"}, extra...)
	p, err := startOperator(ctx, name, bin, be.Kubeconfig, b.dir, env, args)
	if err != nil {
		return nil, err
	}
	b.logf("%s: operator pid %d started (%s), log %s", name, p.Pid(), bin, p.Log)
	return p, nil
}

// waitFor polls cond every 500 ms until it holds, the timeout passes, the
// operator exits or ctx ends.
func waitFor(ctx context.Context, p *operatorProcess, timeout time.Duration, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		ok, err := cond()
		if ok && err == nil {
			return nil
		}
		last = err
		if time.Now().After(deadline) {
			if last != nil {
				return fmt.Errorf("not done after %v: %w", timeout, last)
			}
			return fmt.Errorf("not done after %v", timeout)
		}
		if err := sleep(ctx, p, 500*time.Millisecond); err != nil {
			return err
		}
	}
}

// sleep waits d unless ctx ends or the operator exits.
func sleep(ctx context.Context, p *operatorProcess, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-p.done:
		if p.err != nil {
			return fmt.Errorf("%w (see %s): %w", errStopped, p.Log, p.err)
		}
		return fmt.Errorf("%w with status 0 (see %s)", errStopped, p.Log)
	case <-time.After(d):
		return nil
	}
}

func medianFloat(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
