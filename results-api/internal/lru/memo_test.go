package lru

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A value is computed once and served until it expires, until valid
// refuses it (its generation moved on), and never after an error.
func TestMemoServesUntilExpiredOrInvalid(t *testing.T) {
	now := time.Unix(0, 0)
	m := NewMemo[int](10, time.Minute, time.Minute, func() time.Time { return now })
	var gen uint64 // a generation of the data, as snapshot.Generation counts
	computed := 0
	get := func() int {
		t.Helper()
		g := gen
		v, err := m.Get(context.Background(), "k", strconv.FormatUint(g, 10),
			func(int) bool { return computed > 0 && uint64(computed-1) >= g },
			func(context.Context) (int, error) { computed++; return computed, nil })
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if v := get(); v != 1 {
		t.Fatalf("first get = %d, want 1", v)
	}
	if v := get(); v != 1 || computed != 1 {
		t.Errorf("second get = %d after %d computations, want 1 after 1", v, computed)
	}
	gen++ // a change: the value of generation 0 no longer holds
	if v := get(); v != 2 {
		t.Errorf("after a change: %d, want 2", v)
	}
	now = now.Add(time.Minute) // its age is up
	if v := get(); v != 3 {
		t.Errorf("after its age: %d, want 3", v)
	}

	boom := errors.New("postgres down")
	_, err := m.Get(context.Background(), "e", "0", func(int) bool { return true },
		func(context.Context) (int, error) { return 0, boom })
	if !errors.Is(err, boom) {
		t.Fatalf("error %v, want %v", err, boom)
	}
	if v, err := m.Get(context.Background(), "e", "0", func(int) bool { return true },
		func(context.Context) (int, error) { return 7, nil }); err != nil || v != 7 {
		t.Errorf("after an error: %d, %v; want 7 (errors are not cached)", v, err)
	}
}

// Concurrent callers of one key share one computation, and a caller that
// gives up leaves it running for the others.
func TestMemoOneComputationInFlight(t *testing.T) {
	m := NewMemo[int](10, time.Minute, time.Minute, time.Now)
	var computations atomic.Int64
	started, release := make(chan struct{}), make(chan struct{})
	compute := func(ctx context.Context) (int, error) {
		if computations.Add(1) == 1 {
			close(started)
		}
		<-release
		return 42, ctx.Err()
	}
	always := func(int) bool { return true }

	quitter, quit := context.WithCancel(context.Background())
	quitErr := make(chan error, 1)
	go func() {
		_, err := m.Get(quitter, "k", "0", always, compute)
		quitErr <- err
	}()
	<-started
	quit()
	if err := <-quitErr; !errors.Is(err, context.Canceled) {
		t.Fatalf("the caller that gave up: %v", err)
	}
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if v, err := m.Get(context.Background(), "k", "0", always, compute); err != nil || v != 42 {
				t.Errorf("get = %d, %v", v, err)
			}
		})
	}
	close(release)
	wg.Wait()
	if n := computations.Load(); n != 1 {
		t.Errorf("%d computations for 21 callers, want 1", n)
	}
}
