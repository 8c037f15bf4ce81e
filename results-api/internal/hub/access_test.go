package hub_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/hub"
)

// Each client receives exactly the messages about its namespaces (a client
// of the whole cluster all of them), and a message naming a namespace
// outside a client's comes redacted (PublishRedacted), and one with parts
// for the whole cluster's clients comes without them to the others
// (PublishScoped). Dropping a stalled client is the same
// code path for Publish as for Broadcast (TestSlowClientDropped).
func TestPublishFollowsAccess(t *testing.T) {
	h := hub.New(hub.Options{WriteTimeout: 10 * time.Second})
	access := map[string]*hub.Access{"a": {Namespaces: []string{"a"}}, "ab": {Namespaces: []string{"a", "b"}},
		"b": {Namespaces: []string{"b"}}, "all": {All: true}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = h.ServeAccess(w, r, hub.PeerAddr(r), access[r.URL.Query().Get("who")])
	}))
	defer srv.Close()
	defer h.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conns := map[string]*websocket.Conn{}
	for who := range access {
		c, _, err := websocket.Dial(ctx, strings.Replace(srv.URL, "http", "ws", 1)+"?who="+who, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseNow()
		conns[who] = c
	}
	waitFor(t, func() bool { return h.Clients() == len(access) })
	if !h.Scoped() {
		t.Fatal("Scoped() is false with namespace-limited clients")
	}
	for range 10 {
		h.Publish([]byte("a"), []string{"a"})
	}
	h.Publish([]byte("b"), []string{"b"})
	h.Publish([]byte("c"), []string{"c"})
	// A scan that ran in b of an image running in a and b: whole for the
	// clients that may see b, redacted for the one that may not.
	h.PublishRedacted([]byte("B"), []byte("r"), []string{"a", "b"}, "b")
	// A findings.changed naming where exceptions suppress findings: whole
	// for the cluster's clients, without the namespaces for the others.
	h.PublishScoped([]byte("S"), []byte("s"), []string{"b"})
	h.Publish([]byte("end"), []string{"a", "b"})
	want := map[string]string{"a": "aaaaaaaaaa,r,end", "ab": "aaaaaaaaaa,b,B,s,end", "b": "b,B,s,end", "all": "aaaaaaaaaa,b,c,B,S,end"}
	for who, w := range want {
		var got strings.Builder
		for {
			_, msg, err := conns[who].Read(ctx)
			if err != nil {
				t.Fatalf("%s: %v", who, err)
			}
			if string(msg) == "end" {
				got.WriteString(",end")
				break
			}
			if got.Len() > 0 && string(msg) != "a" {
				got.WriteString(",")
			}
			got.Write(msg)
		}
		if got.String() != w {
			t.Errorf("%s received %q, want %q", who, got.String(), w)
		}
	}
}
