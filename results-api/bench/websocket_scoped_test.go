package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/bomtest"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/hub"
)

// BenchmarkWebSocketFanoutScoped is BenchmarkWebSocketFanout with
// per-connection scopes: 1,000 real WebSocket clients (smoke: 20), each
// allowed 1 to 50 of 500 namespaces (seeded at random), and per op one
// event about an image running in 3 namespaces, sent with Hub.Publish. It
// reports the p99 time from Publish to the frame being read over the
// clients that are in scope (checked: exactly they receive it), and how
// many that is per event. No client is stalled here (the drop path is
// Broadcast's, measured there). The bus adds one SQL query per event (the
// digest's namespaces), which this benchmark leaves out.
func BenchmarkWebSocketFanoutScoped(b *testing.B) {
	clients, namespaces := fullClients, 500
	if smoke {
		clients = smokeClients
	}
	rng := rand.New(rand.NewPCG(1, 2))
	ns := func(i int) string { return fmt.Sprintf("ns-%03d", i) }
	access := make([]*hub.Access, clients)
	for i := range access {
		n := 1 + rng.IntN(50)
		set := map[string]bool{}
		for len(set) < n {
			set[ns(rng.IntN(namespaces))] = true
		}
		a := &hub.Access{}
		for k := range set {
			a.Namespaces = append(a.Namespaces, k)
		}
		slices.Sort(a.Namespaces)
		access[i] = a
	}
	h := hub.New(hub.Options{MaxClientsPerAddr: clients})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var i int
		_, _ = fmt.Sscan(r.URL.Query().Get("i"), &i)
		_ = h.ServeAccess(w, r, hub.PeerAddr(r), access[i])
	}))
	defer srv.Close()
	defer h.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	url := strings.Replace(srv.URL, "http", "ws", 1)

	base := time.Now()
	var sentAt int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	lat := make([]time.Duration, clients)
	got := make([]int, clients) // frames received per client
	var readers sync.WaitGroup
	for i := range clients {
		c, _, err := websocket.Dial(ctx, fmt.Sprintf("%s?i=%d", url, i), nil)
		if err != nil {
			b.Fatalf("client %d: %v", i, err)
		}
		readers.Go(func() {
			defer c.CloseNow()
			for {
				if _, _, err := c.Read(ctx); err != nil {
					return
				}
				mu.Lock()
				lat[i] = time.Duration(time.Since(base).Nanoseconds() - sentAt)
				got[i]++
				mu.Unlock()
				wg.Done()
			}
		})
	}
	waitClients(b, h, clients)
	msg := []byte(fmt.Sprintf(`{"type":"report.stored","id":"%s","time":"2026-11-01T10:00:00Z","data":{"digest":"%s","image":"registry.example/team7/app@%s","scannedAt":"2026-11-01T10:00:00Z","counts":{"critical":3,"high":12,"medium":40,"low":9,"negligible":2,"unknown":0},"fixable":31,"findings":66}}`,
		strings.Repeat("a", 64), bomtest.Digest(7), bomtest.Digest(7)))

	b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
		var all []time.Duration
		var publish []time.Duration
		receivers := 0
		b.ResetTimer()
		for range b.N {
			event := []string{ns(rng.IntN(namespaces)), ns(rng.IntN(namespaces)), ns(rng.IntN(namespaces))}
			slices.Sort(event)
			var in []int
			for i, a := range access {
				for _, e := range event {
					if _, ok := slices.BinarySearch(a.Namespaces, e); ok {
						in = append(in, i)
						break
					}
				}
			}
			before := make([]int, clients)
			mu.Lock()
			copy(before, got)
			sentAt = time.Since(base).Nanoseconds()
			mu.Unlock()
			wg.Add(len(in))
			t0 := time.Now()
			h.Publish(msg, event)
			publish = append(publish, time.Since(t0))
			if !waitTimeout(&wg, 30*time.Second) {
				b.Fatal("not every client in scope got the event within 30s")
			}
			mu.Lock()
			for _, i := range in {
				all = append(all, lat[i])
			}
			for i := range got {
				want := before[i]
				if slices.Contains(in, i) {
					want++
				}
				if got[i] != want {
					mu.Unlock()
					b.Fatalf("client %d received %d frames, want %d", i, got[i]-before[i], want-before[i])
				}
			}
			mu.Unlock()
			receivers += len(in)
		}
		b.StopTimer()
		b.ReportMetric(ms(p99(all)), "p99-ms")
		b.ReportMetric(float64(p99(publish).Microseconds()), "p99-publish-µs")
		b.ReportMetric(float64(receivers)/float64(b.N), "receivers/event")
	})
	cancel()
	h.Close()
	readers.Wait()
}
