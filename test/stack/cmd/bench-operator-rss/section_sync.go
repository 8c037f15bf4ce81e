package main

import (
	"fmt"
	"time"
)

// syncSection renders the sync scenario: conditions, a table per build
// and, with two builds, new/old ratios.
func syncSection(name string, size Size, settle time.Duration, runs []syncRun) *section {
	s := &section{Title: fmt.Sprintf("%s: %d Pods, %d digests, all reports present, one Scanner", name, size.Pods, size.Digests)}
	s.linef("%d Pods (2 containers each) in %d namespace(s), %d distinct digests with reports in results-api before the operator starts; "+
		"one Scanner (maxConcurrentScans 50). Each build starts on the same cluster (the Scanner's status is cleared in between), "+
		"syncs, is sampled for %v after the sync (settled RSS = median of the last 30 s; the idle window is the last part of it), "+
		"then gets full reconciles asked for with the `crowsnest.dev/requested-at` annotation, 15 s apart.\n",
		size.Pods, size.Namespaces, size.Digests, settle)
	for _, r := range runs {
		s.linef("### %s operator\n", r.Build)
		s.linef("| t since start | RSS MiB | RSS 30 s median | heap in use MiB | heap alloc MiB | |")
		s.linef("|---|---|---|---|---|---|")
		for _, x := range r.Rows {
			s.linef("| %s | %s | %s | %s | %s | %s |", dur(x.At), mibi(x.RSS), mibi(x.Median30), mib(x.HeapInuse), mib(x.HeapAlloc), x.Note)
		}
		s.linef("")
		s.linef("- sync (start → status counts all digests scanned): %s", dur(r.Sync))
		s.linef("- RSS settled: **%s MiB**; peak %s MiB (VmHWM; highest sample %s MiB)", mibi(r.Settled), mibi(r.HWM), mibi(r.PeakSampled))
		s.linef("- Go heap at the end of the settle window: in use %s MiB, alloc %s MiB", mib(r.HeapInuse), mib(r.HeapAlloc))
		s.linef("- idle %v: %.2f CPU s, %v reconciles, %v timed requeues", dur(r.Idle.Window), r.Idle.CPU, r.Idle.Reconciles, r.Idle.TimedRequeues)
		for i, c := range r.Reconciles {
			s.linef("- full reconcile %d: RSS %s → %s MiB (**%+.1f MiB**), allocated %s MiB (heap alloc %+.1f MiB), %.3f s (reconcile time), %.2f CPU s",
				i+1, mibi(c.RSSBefore), mibi(c.RSSAfter), float64(c.Added())/(1<<20), mib(c.Allocated), c.HeapAllocDelta/(1<<20), c.Duration, c.CPU)
		}
		exit := "exited cleanly on SIGTERM"
		if r.Exit != nil {
			exit = "**did not exit cleanly**: " + r.Exit.Error()
		}
		s.linef("- scan Jobs created: %v; %s\n", r.JobsCreated, exit)
	}
	if len(runs) == 2 && runs[0].Build == "base" {
		oldR, newR := runs[0], runs[1]
		s.linef("### new/old (current tree ÷ base commit)\n")
		s.linef("| | base | current | new/old |")
		s.linef("|---|---|---|---|")
		s.linef("| RSS settled MiB | %s | %s | %s |", mibi(oldR.Settled), mibi(newR.Settled), ratio(float64(newR.Settled), float64(oldR.Settled)))
		s.linef("| RSS peak MiB | %s | %s | %s |", mibi(oldR.HWM), mibi(newR.HWM), ratio(float64(newR.HWM), float64(oldR.HWM)))
		s.linef("| heap in use MiB | %s | %s | %s |", mib(oldR.HeapInuse), mib(newR.HeapInuse), ratio(newR.HeapInuse, oldR.HeapInuse))
		oa, na := medianAdded(oldR), medianAdded(newR)
		s.linef("| RSS added by a full reconcile MiB (median) | %s | %s | %s |", mib(oa), mib(na), ratio(na, oa))
		oh, nh := medianAllocated(oldR), medianAllocated(newR)
		s.linef("| allocated by a full reconcile MiB (median; 10 s window, scrapes included) | %s | %s | %s |", mib(oh), mib(nh), ratio(nh, oh))
		od, nd := medianDuration(oldR), medianDuration(newR)
		s.linef("| full reconcile time s (median) | %.3f | %.3f | %s |", od, nd, ratio(nd, od))
		s.linef("| sync time | %s | %s | %s |", dur(oldR.Sync), dur(newR.Sync), ratio(newR.Sync.Seconds(), oldR.Sync.Seconds()))
		s.linef("| idle CPU s per minute | %.2f | %.2f | %s |", perMinute(oldR.Idle), perMinute(newR.Idle), ratio(perMinute(newR.Idle), perMinute(oldR.Idle)))
		s.linef("")
	}
	return s
}

func medianAdded(r syncRun) float64 {
	var v []float64
	for _, c := range r.Reconciles {
		v = append(v, float64(c.Added()))
	}
	return medianFloat(v)
}

func medianAllocated(r syncRun) float64 {
	var v []float64
	for _, c := range r.Reconciles {
		v = append(v, c.Allocated)
	}
	return medianFloat(v)
}

func medianDuration(r syncRun) float64 {
	var v []float64
	for _, c := range r.Reconciles {
		v = append(v, c.Duration)
	}
	return medianFloat(v)
}

func perMinute(i idleStats) float64 {
	if i.Window <= 0 {
		return 0
	}
	return i.CPU / i.Window.Minutes()
}
