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

// allocsMetric is the heap's cumulative allocated bytes.
const allocsMetric = "/gc/heap/allocs:bytes"

// Idle configures ReleaseWhenIdle.
type Idle struct {
	// Every is how often the allocation rate is read; zero means 10 s.
	Every time.Duration
	// Quiet is the most a process may allocate in one Every and count as
	// idle; zero means 1 MiB.
	Quiet uint64
	// Burst is how much it must have allocated since the last release for
	// another to be worth a collection; zero means 64 MiB.
	Burst uint64
	// Release returns the memory; nil means debug.FreeOSMemory (a full
	// collection, then every free page back to the kernel).
	Release func()
}

// ReleaseWhenIdle calls Release when, after a Burst of allocation, one
// period of Every allocates less than Quiet; at most once per burst, so an
// idle process collects no more than the runtime would. It returns when ctx
// ends.
func ReleaseWhenIdle(ctx context.Context, c Idle) {
	every, quiet, burst, release := c.Every, c.Quiet, c.Burst, c.Release
	if every <= 0 {
		every = 10 * time.Second
	}
	if quiet == 0 {
		quiet = 1 << 20
	}
	if burst == 0 {
		burst = 64 << 20
	}
	if release == nil {
		release = debug.FreeOSMemory
	}
	t := time.NewTicker(every)
	defer t.Stop()
	w := idleWatch{quiet: quiet, burst: burst, last: allocated()}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if w.step(allocated()) {
			release()
		}
	}
}

// idleWatch decides on the allocation counter read once per period.
type idleWatch struct {
	quiet, burst uint64
	last         uint64 // the counter at the previous read
	since        uint64 // allocated since the last release
}

// step takes the counter's new value and says whether to release now.
func (w *idleWatch) step(now uint64) bool {
	delta := now - w.last
	w.last = now
	w.since += delta
	if delta < w.quiet && w.since >= w.burst {
		w.since = 0
		return true
	}
	return false
}

func allocated() uint64 {
	s := []metrics.Sample{{Name: allocsMetric}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}
