package memlimit

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// TestIdleWatch feeds the decision the allocation counter and what a
// release would return, one read per period: no release while idle with
// little to return, none while allocating, one when the first quiet period
// follows work that left enough to return — also after a burst smaller
// than what it left mapped —, none after until more was allocated, and
// none when the runtime itself already returned the memory.
func TestIdleWatch(t *testing.T) {
	const mib = 1 << 20
	w := idleWatch{quiet: mib, reclaim: 32 * mib}
	var counter uint64
	steps := []struct {
		alloc, reclaimable uint64
		want               bool
		what               string
	}{
		{0, 0, false, "idle, nothing allocated"},
		{mib / 2, mib, false, "idle, below quiet, nothing to return"},
		{40 * mib, 30 * mib, false, "allocating"},
		{40 * mib, 70 * mib, false, "allocating, much to return"},
		{mib / 4, 70 * mib, true, "quiet after the burst"},
		{0, 70 * mib, false, "still quiet: released already (this watch's release returned nothing)"},
		{20 * mib, 10 * mib, false, "allocating, 20 MiB since"},
		{0, 45 * mib, false, "quiet, 45 MiB to return but only 20 allocated since the release"},
		{15 * mib, 45 * mib, false, "allocating: 35 MiB since"},
		{0, 45 * mib, true, "quiet after a 35 MiB burst that left 45 MiB to return"},
		{40 * mib, 40 * mib, false, "allocating"},
		{0, 8 * mib, false, "quiet, but the runtime returned the memory already"},
	}
	for i, s := range steps {
		counter += s.alloc
		if got := w.step(counter, s.reclaimable); got != s.want {
			t.Fatalf("step %d (%s): release %v, want %v", i, s.what, got, s.want)
		}
	}
}

var sink []byte

// TestReleaseWhenIdle runs ReleaseWhenIdle on the real runtime's metrics:
// with 64 MiB live (so the collector's goal is far), a 48 MiB burst of
// garbage followed by quiet gives exactly one release.
func TestReleaseWhenIdle(t *testing.T) {
	live := make([][]byte, 64)
	for i := range live {
		live[i] = make([]byte, 1<<20)
	}
	runtime.GC() // the live heap is now 64 MiB
	var released atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		ReleaseWhenIdle(ctx, Idle{Every: 50 * time.Millisecond, Quiet: 1 << 20, Reclaim: 16 << 20, Release: func() { released.Add(1) }})
	}()
	defer func() { cancel(); <-done }()

	time.Sleep(100 * time.Millisecond)
	for range 48 {
		sink = make([]byte, 1<<20)
	}
	deadline := time.Now().Add(10 * time.Second)
	for released.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // quiet periods after the release
	if n := released.Load(); n != 1 {
		t.Fatalf("%d releases after a 48 MiB burst of garbage and quiet; want 1", n)
	}
	runtime.KeepAlive(live)
}
