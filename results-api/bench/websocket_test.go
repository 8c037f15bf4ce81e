package bench

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/bomtest"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/hub"
)

// Sizes of BenchmarkWebSocketFanout. Removing the stalled client takes a
// few hundred events, so smoke mode sends at least smokeEvents whatever
// b.N is: the checks on the stalled client then always run.
const (
	fullClients  = 1000
	smokeClients = 20
	checkEvents  = 200 // events after which the stalled client must be gone
	smokeEvents  = 300
)

// BenchmarkWebSocketFanout sends one event per op through the real hub (with
// the service's default options, but for the per-address cap: all clients
// come from one address) to 1,000 real WebSocket clients (smoke
// mode: 20) over loopback and measures, for each of the 999 reading
// clients, the time from Broadcast to the frame being read. Client 0 is
// stalled: it never reads, its receive buffer is 4 KiB and its server-side
// send buffer 16 KiB (on loopback the kernel would otherwise buffer megabytes before
// the hub ever notices). Within a few hundred events the hub removes it,
// whichever of its two limits trips first: the queue of 64 overflows
// (dropped, status 1008) or one write blocks for the 5 s write timeout.
// "stalled-gone-at-event" reports when; "stalled-dropped" is 1 when it was
// the queue overflow.
func BenchmarkWebSocketFanout(b *testing.B) {
	wsClients := fullClients
	if smoke {
		wsClients = smokeClients
	}
	var dropped atomic.Bool
	var sent, goneAt atomic.Int64 // events sent; event at which the stalled client left
	var readersUp atomic.Bool
	h := hub.New(hub.Options{
		// Every client dials from 127.0.0.1: lift the per-address cap.
		MaxClientsPerAddr: wsClients,
		OnDrop:            func() { dropped.Store(true) },
		OnClients: func(n int) {
			if readersUp.Load() && n == wsClients-1 {
				goneAt.CompareAndSwap(0, sent.Load())
			}
		},
	})
	srv := httptest.NewUnstartedServer(h)
	srv.Listener = &firstConnSmallSendBuf{Listener: srv.Listener}
	srv.Start()
	defer srv.Close()
	defer h.Close()
	url := strings.Replace(srv.URL, "http", "ws", 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	stalled, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPClient: smallRecvBufClient()})
	if err != nil {
		b.Fatal(err)
	}
	defer stalled.CloseNow()
	waitClients(b, h, 1)

	var base = time.Now()
	var sentAt atomic.Int64 // ns since base of the current Broadcast
	var wg sync.WaitGroup
	lat := make([]time.Duration, wsClients-1)
	var readers sync.WaitGroup
	sem := make(chan struct{}, 50)
	for i := range wsClients - 1 {
		sem <- struct{}{}
		c, _, err := websocket.Dial(ctx, url, nil)
		<-sem
		if err != nil {
			b.Fatalf("client %d: %v", i, err)
		}
		c.SetReadLimit(1 << 20)
		readers.Go(func() {
			defer c.CloseNow()
			for {
				if _, _, err := c.Read(ctx); err != nil {
					return
				}
				lat[i] = time.Duration(time.Since(base).Nanoseconds() - sentAt.Load())
				wg.Done()
			}
		})
	}
	waitClients(b, h, wsClients)
	readersUp.Store(true)

	msg := []byte(fmt.Sprintf(`{"type":"report.stored","id":"%s","time":"2026-11-01T10:00:00Z","data":{"digest":"%s","image":"registry.example/team7/app@%s","scannedAt":"2026-11-01T10:00:00Z","counts":{"critical":3,"high":12,"medium":40,"low":9,"negligible":2,"unknown":0},"fixable":31,"findings":66}}`,
		strings.Repeat("a", 64), bomtest.Digest(7), bomtest.Digest(7)))
	b.Run(fmt.Sprintf("clients=%d", wsClients), func(b *testing.B) {
		events := b.N
		if smoke {
			events = max(events, smokeEvents)
		}
		all := make([]time.Duration, 0, events*(wsClients-1))
		var withStalled, without []time.Duration // split at the stalled client's removal
		b.ResetTimer()
		for range events {
			wg.Add(wsClients - 1)
			sentAt.Store(time.Since(base).Nanoseconds())
			n := sent.Add(1)
			h.Broadcast(msg)
			if !waitTimeout(&wg, 30*time.Second) {
				b.Fatal("not every reading client got the event within 30s")
			}
			all = append(all, lat...)
			if g := goneAt.Load(); g == 0 || n <= g {
				withStalled = append(withStalled, lat...)
			} else {
				without = append(without, lat...)
			}
		}
		b.StopTimer()
		b.ReportMetric(ms(p99(all)), "p99-ms")
		b.ReportMetric(ms(p99(withStalled)), "p99-with-stalled-ms")
		b.ReportMetric(ms(p99(without)), "p99-after-removal-ms")
		b.ReportMetric(float64(goneAt.Load()), "stalled-gone-at-event")
		if dropped.Load() {
			b.ReportMetric(1, "stalled-dropped")
		} else {
			b.ReportMetric(0, "stalled-dropped")
		}
		if events >= checkEvents && goneAt.Load() == 0 {
			b.Errorf("the stalled client was still connected after %d events", sent.Load())
		}
		if n := h.Clients(); events >= checkEvents && n != wsClients-1 {
			b.Errorf("%d clients connected, want %d readers", n, wsClients-1)
		}
	})
	cancel()
	h.Close()
	readers.Wait()
}

func waitClients(b *testing.B, h *hub.Hub, n int) {
	deadline := time.Now().Add(60 * time.Second)
	for h.Clients() != n {
		if time.Now().After(deadline) {
			b.Fatalf("%d clients connected, want %d", h.Clients(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func waitTimeout(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// firstConnSmallSendBuf gives the first accepted connection (the stalled
// client's) a 16 KiB send buffer; the others keep the kernel's defaults.
type firstConnSmallSendBuf struct {
	net.Listener
	once sync.Once
}

func (l *firstConnSmallSendBuf) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.once.Do(func() { _ = c.(*net.TCPConn).SetWriteBuffer(16 << 10) })
	}
	return c, err
}

// smallRecvBufClient dials with SO_RCVBUF set before connect, so the TCP
// window the stalled client advertises stays small.
func smallRecvBufClient() *http.Client {
	d := &net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4<<10)
		})
		if err != nil {
			return err
		}
		return serr
	}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
}
