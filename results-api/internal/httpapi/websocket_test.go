package httpapi_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/service"
)

// One source address gets at most --max-websocket-clients-per-ip
// connections: the next is refused with 429 too_many_connections before
// the upgrade, and a closed connection frees its place.
func TestWebSocketClientsPerAddress(t *testing.T) {
	const perAddr = 3
	c := newClient(t, withConfig(func(c *service.Config) { c.MaxWebSocketClientsPerAddr = perAddr }))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	url := "ws" + strings.TrimPrefix(c.srv.URL, "http") + "/api/v1/events"
	var conns []*websocket.Conn
	for i := range perAddr {
		ws, _, err := websocket.Dial(ctx, url, nil)
		if err != nil {
			t.Fatalf("connection %d of %d: %v", i+1, perAddr, err)
		}
		defer ws.CloseNow()
		conns = append(conns, ws)
	}
	_, resp, err := websocket.Dial(ctx, url, nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("connection %d: %v, %v; want 429", perAddr+1, resp, err)
	}
	b, _ := io.ReadAll(resp.Body)
	if code := errorCode(t, b); code != "too_many_connections" {
		t.Errorf("error code %q", code)
	}
	if got := metricValue(t, c, `crowsnest_results_api_limit_refusals_total{limit="websocket_per_address"}`); got != 1 {
		t.Errorf("websocket_per_address refusals = %v, want 1", got)
	}
	_ = conns[0].Close(websocket.StatusNormalClosure, "")
	deadline := time.Now().Add(10 * time.Second)
	for {
		ws, _, err := websocket.Dial(ctx, url, nil)
		if err == nil {
			ws.CloseNow()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no place freed by a closed connection: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
