package hub_test

import (
	"bytes"
	"context"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/hub"
)

// Callbacks must run outside the hub's lock: a drop callback that blocks
// must not stall Clients (or any other hub call), and a callback that calls
// back into the hub must not deadlock. Before the fix this test hung in
// Clients(); every wait here is bounded so it fails instead.
func TestCallbacksRunOutsideLock(t *testing.T) {
	var h *hub.Hub
	entered := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	var reentrantBlocked atomic.Bool
	h = hub.New(hub.Options{
		QueueSize:    1,
		WriteTimeout: time.Minute, // the stalled client must be dropped by queue, not by timeout
		OnClients: func(int) { // re-entrant: calls back into the hub
			if !within(2*time.Second, func() { _ = h.Clients() }) {
				reentrantBlocked.Store(true)
			}
		},
		OnDrop: func() { // blocks until the test releases it (bounded)
			once.Do(func() { close(entered) })
			select {
			case <-release:
			case <-time.After(30 * time.Second):
			}
		},
	})
	srv := httptest.NewServer(h)
	defer srv.Close()
	defer h.Close()
	var releaseOnce sync.Once
	unblock := func() { releaseOnce.Do(func() { close(release) }) }
	defer unblock()

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	stalled, _, err := websocket.Dial(ctx, strings.Replace(srv.URL, "http", "ws", 1), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.CloseNow()
	waitFor(t, func() bool { return h.Clients() == 1 })

	// 1 MiB frames fill the loopback buffers after a few broadcasts; then the
	// one-slot queue overflows and the client is dropped.
	msg := bytes.Repeat([]byte("x"), 1<<20)
	go func() {
		for range 200 {
			select {
			case <-entered:
				return
			default:
				h.Broadcast(msg)
			}
		}
	}()
	select {
	case <-entered:
	case <-ctx.Done():
		t.Fatal("stalled client was never dropped")
	}

	var n int
	if !within(5*time.Second, func() { n = h.Clients() }) {
		unblock()
		t.Fatal("Clients() blocked while OnDrop was running: callback called under the hub lock")
	}
	if n != 0 {
		t.Errorf("clients while drop callback blocks = %d, want 0", n)
	}
	unblock()
	if reentrantBlocked.Load() {
		t.Error("OnClients calling Clients() blocked: callback called under the hub lock")
	}
}

// within reports whether f returned within d; f keeps running otherwise.
func within(d time.Duration, f func()) bool {
	done := make(chan struct{})
	go func() { f(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}
