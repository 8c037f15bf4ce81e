package memlimit

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// TestIdleWatch feeds the decision a counter, one read per period: no
// release while idle without a burst behind, none while allocating (also
// past the burst size), one when the first quiet period follows a burst, and
// none after until another burst.
func TestIdleWatch(t *testing.T) {
	const mib = 1 << 20
	w := idleWatch{quiet: mib, burst: 64 * mib}
	var counter uint64
	steps := []struct {
		alloc uint64
		want  bool
		what  string
	}{
		{0, false, "idle, nothing allocated"},
		{mib / 2, false, "idle, below quiet, no burst behind"},
		{40 * mib, false, "allocating"},
		{40 * mib, false, "allocating, past the burst size"},
		{10 * mib, false, "still allocating"},
		{mib / 4, true, "quiet after the burst"},
		{0, false, "still quiet: released already"},
		{mib / 2, false, "quiet"},
		{30 * mib, false, "allocating, below the burst size"},
		{0, false, "quiet, but no burst since the release"},
		{40 * mib, false, "allocating: the burst is now 70 MiB"},
		{0, true, "quiet after the second burst"},
	}
	for i, s := range steps {
		counter += s.alloc
		if got := w.step(counter); got != s.want {
			t.Fatalf("step %d (%s): release %v, want %v", i, s.what, got, s.want)
		}
	}
}

var sink []byte

// TestReleaseWhenIdle runs ReleaseWhenIdle on the real runtime's counter: a
// 64 MiB burst followed by quiet gives exactly one release.
func TestReleaseWhenIdle(t *testing.T) {
	var released atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		ReleaseWhenIdle(ctx, Idle{Every: 50 * time.Millisecond, Quiet: 1 << 20, Burst: 32 << 20, Release: func() { released.Add(1) }})
	}()
	defer func() { cancel(); <-done }()

	time.Sleep(100 * time.Millisecond)
	for range 64 {
		sink = make([]byte, 1<<20)
	}
	deadline := time.Now().Add(10 * time.Second)
	for released.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // quiet periods after the release
	if n := released.Load(); n != 1 {
		t.Fatalf("%d releases after a 64 MiB burst and quiet; want 1", n)
	}
}
