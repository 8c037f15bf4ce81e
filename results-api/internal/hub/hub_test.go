package hub_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/hub"
)

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A stalled client (never reads) is dropped with StatusPolicyViolation
// while a reading client receives every message.
func TestSlowClientDropped(t *testing.T) {
	dropped := make(chan struct{}, 1)
	// A long write timeout: the stalled client must be dropped because its
	// queue overflows, not because a write timed out (which is no "drop").
	h := hub.New(hub.Options{QueueSize: 256, WriteTimeout: 10 * time.Second, OnDrop: func() {
		select {
		case dropped <- struct{}{}:
		default:
		}
	}})
	srv := httptest.NewServer(h)
	defer srv.Close()
	defer h.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	url := strings.Replace(srv.URL, "http", "ws", 1)

	stalled, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.CloseNow()
	good, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer good.CloseNow()
	waitFor(t, func() bool { return h.Clients() == 2 })

	got := make(chan int, 1)
	go func() {
		n := 0
		for {
			if _, _, err := good.Read(ctx); err != nil {
				got <- n
				return
			}
			if n++; n == 2000 {
				got <- n
				return
			}
		}
	}()
	payload := strings.Repeat("x", 8192)
	for i := range 2000 {
		h.Broadcast([]byte(fmt.Sprintf(`{"i":%d,"p":%q}`, i, payload)))
		if i%50 == 0 {
			time.Sleep(time.Millisecond) // let the good reader keep up
		}
	}
	select {
	case <-dropped:
	case <-ctx.Done():
		t.Fatal("stalled client was never dropped")
	}
	if n := <-got; n != 2000 {
		t.Errorf("reading client got %d of 2000 messages", n)
	}
}

func TestOriginCheck(t *testing.T) {
	h := hub.New(hub.Options{})
	srv := httptest.NewServer(h)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, resp, err := websocket.Dial(ctx, strings.Replace(srv.URL, "http", "ws", 1), &websocket.DialOptions{
		HTTPHeader: http.Header{"Origin": []string{"https://evil.example"}}})
	if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("cross-origin dial: err %v, resp %v", err, resp)
	}
}

// The total cap refuses with 503 and the address cap with 429, both
// before the upgrade; a closed client frees its place in both.
func TestClientCaps(t *testing.T) {
	h := hub.New(hub.Options{MaxClients: 3, MaxClientsPerAddr: 2})
	srv := httptest.NewServer(h)
	defer srv.Close()
	defer h.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	url := strings.Replace(srv.URL, "http", "ws", 1)
	dial := func(via string) (*websocket.Conn, int) {
		t.Helper()
		opts := &websocket.DialOptions{}
		if via != "" {
			// Another source address: the server sees a peer on 127.0.0.2.
			opts.HTTPClient = &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{
				LocalAddr: &net.TCPAddr{IP: net.ParseIP(via)}}).DialContext}}
		}
		c, resp, err := websocket.Dial(ctx, url, opts)
		if err != nil {
			if resp == nil {
				t.Fatalf("dial via %q: %v", via, err)
			}
			return nil, resp.StatusCode
		}
		t.Cleanup(func() { c.CloseNow() })
		return c, http.StatusSwitchingProtocols
	}
	first, _ := dial("")
	if _, code := dial(""); code != http.StatusSwitchingProtocols {
		t.Fatalf("second client from one address: %d", code)
	}
	if _, code := dial(""); code != http.StatusTooManyRequests {
		t.Fatalf("third client from one address: %d, want 429", code)
	}
	if _, code := dial("127.0.0.2"); code != http.StatusSwitchingProtocols {
		t.Fatalf("a client from another address: %d", code)
	}
	if _, code := dial("127.0.0.3"); code != http.StatusServiceUnavailable {
		t.Fatalf("a fourth client in all: %d, want 503", code)
	}
	_ = first.Close(websocket.StatusNormalClosure, "")
	waitFor(t, func() bool { return h.Clients() == 2 })
	waitFor(t, func() bool {
		c, code := dial("127.0.0.3")
		if c != nil {
			c.CloseNow()
		}
		return code == http.StatusSwitchingProtocols
	})
}
