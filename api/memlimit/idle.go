package memlimit

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// The runtime keeps the heap it has grown to: after a busy spell it returns
// free pages to the kernel only down to about its next collection's goal,
// twice the live heap at GOGC=100, and a process that has gone quiet
// collects again only when forced, every two minutes. So a controller that
// has just worked through a burst sits at the burst's footprint for as long
// as it stays idle, and that is the usage the cluster sees (kubectl top, a
// VPA's recommendation, the node's memory pressure). ReleaseWhenIdle returns
// that memory once the process goes quiet after a burst. The peak is not
// lowered, and the container's limit must still cover it.

// The runtime metrics ReleaseWhenIdle reads: the heap's cumulative
// allocated bytes, and what a release would return — heap pages that are
// free and not yet returned, and objects the last collection did not find
// live (garbage since).
const (
	allocsMetric  = "/gc/heap/allocs:bytes"
	freeMetric    = "/memory/classes/heap/free:bytes"
	objectsMetric = "/memory/classes/heap/objects:bytes"
	liveMetric    = "/gc/heap/live:bytes"
)

// Idle configures ReleaseWhenIdle.
type Idle struct {
	// Every is how often the allocation rate is read; zero means 10 s.
	Every time.Duration
	// Quiet is the most a process may allocate in one Every and count as
	// idle; zero means 1 MiB.
	Quiet uint64
	// Reclaim is the least a release must return to be worth a full
	// collection: the heap's free pages not yet returned plus its garbage;
	// zero means 32 MiB.
	Reclaim uint64
	// Release returns the memory; nil means debug.FreeOSMemory (a full
	// collection, then every free page back to the kernel).
	Release func()
}

// ReleaseWhenIdle calls Release when a period of Every allocates less than
// Quiet and a release would return at least Reclaim, of which at least
// Reclaim was allocated since the last release: at most once per spell of
// work, so an idle process collects no more than the runtime would. It
// returns when ctx ends.
//
// What a release would return is read, not inferred from how much was
// allocated: the last burst before going quiet may be small (a wave of
// status writes after a release) and still leave tens of MiB of free pages
// mapped, which the runtime keeps while it idles.
func ReleaseWhenIdle(ctx context.Context, c Idle) {
	every, quiet, reclaim, release := c.Every, c.Quiet, c.Reclaim, c.Release
	if every <= 0 {
		every = 10 * time.Second
	}
	if quiet == 0 {
		quiet = 1 << 20
	}
	if reclaim == 0 {
		reclaim = 32 << 20
	}
	if release == nil {
		release = debug.FreeOSMemory
	}
	t := time.NewTicker(every)
	defer t.Stop()
	samples := []metrics.Sample{{Name: allocsMetric}, {Name: freeMetric}, {Name: objectsMetric}, {Name: liveMetric}}
	read := func() (allocated, reclaimable uint64) {
		metrics.Read(samples)
		v := make([]uint64, len(samples))
		for i, s := range samples {
			if s.Value.Kind() == metrics.KindUint64 {
				v[i] = s.Value.Uint64()
			}
		}
		garbage := uint64(0)
		if v[2] > v[3] {
			garbage = v[2] - v[3]
		}
		return v[0], v[1] + garbage
	}
	first, _ := read()
	w := idleWatch{quiet: quiet, reclaim: reclaim, last: first}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if w.step(read()) {
			release()
		}
	}
}

// idleWatch decides on the allocation counter and the reclaimable bytes,
// read once per period.
type idleWatch struct {
	quiet, reclaim uint64
	last           uint64 // the counter at the previous read
	since          uint64 // allocated since the last release
}

// step takes the counter's new value and what a release would return now,
// and says whether to release.
func (w *idleWatch) step(allocated, reclaimable uint64) bool {
	delta := allocated - w.last
	w.last = allocated
	w.since += delta
	if delta < w.quiet && w.since >= w.reclaim && reclaimable >= w.reclaim {
		w.since = 0
		return true
	}
	return false
}
