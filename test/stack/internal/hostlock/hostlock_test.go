package hostlock

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func fastPoll(t *testing.T) {
	old := poll
	poll = 10 * time.Millisecond
	t.Cleanup(func() { poll = old })
}

// TestSecondTakerIsRefused: while one taker holds the lock, a second one
// that does not wait is refused at once with ErrBusy naming the holder's
// pid; once the first releases it, the second gets it.
func TestSecondTakerIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "locks", "kube-proxy") // the directory is created
	first, err := Take(t.Context(), path, 0)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(os.Getpid()) {
		t.Fatalf("lock file holds %q (%v), want our pid", b, err)
	}
	if !Held(path) {
		t.Fatal("Held: false while the first taker holds it")
	}
	start := time.Now()
	second, err := Take(t.Context(), path, 0)
	if !errors.Is(err, ErrBusy) || second != nil {
		t.Fatalf("second Take: %v, %v; want ErrBusy", second, err)
	}
	if want := "pid " + strconv.Itoa(os.Getpid()) + " holds " + path; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Take without wait took %v", d)
	}
	first.Release()
	first.Release() // a second Release does nothing
	if Held(path) {
		t.Fatal("Held: true after Release")
	}
	second, err = Take(t.Context(), path, 0)
	if err != nil {
		t.Fatalf("Take after Release: %v", err)
	}
	second.Release()
}

// TestSecondTakerWaits: a second taker that may wait gets the lock once the
// first releases it within the wait.
func TestSecondTakerWaits(t *testing.T) {
	fastPoll(t)
	path := filepath.Join(t.TempDir(), "kube-router")
	first, err := Take(t.Context(), path, 0)
	if err != nil {
		t.Fatal(err)
	}
	released := make(chan struct{})
	go func() {
		time.Sleep(100 * time.Millisecond)
		first.Release()
		close(released)
	}()
	second, err := Take(t.Context(), path, 10*time.Second)
	if err != nil {
		t.Fatalf("second Take: %v", err)
	}
	select {
	case <-released:
	default:
		t.Fatal("second Take got the lock before the first released it")
	}
	second.Release()
}

// TestSecondTakerTimesOut: a second taker waits its whole wait for a lock
// that stays held, then is refused with ErrBusy; a cancelled context ends
// the wait early.
func TestSecondTakerTimesOut(t *testing.T) {
	fastPoll(t)
	path := filepath.Join(t.TempDir(), "kube-router")
	first, err := Take(t.Context(), path, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Release()

	const wait = 200 * time.Millisecond
	start := time.Now()
	_, err = Take(t.Context(), path, wait)
	if !errors.Is(err, ErrBusy) {
		t.Fatalf("Take on a held lock: %v, want ErrBusy", err)
	}
	if d := time.Since(start); d < wait {
		t.Errorf("gave up after %v, before its wait of %v", d, wait)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	start = time.Now()
	_, err = Take(ctx, path, time.Minute)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Take with an ending context: %v, want context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the context's end did not stop the wait (%v)", d)
	}
}
