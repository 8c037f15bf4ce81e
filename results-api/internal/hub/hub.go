package hub

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// Options tune the hub. Zero values get defaults.
type Options struct {
	QueueSize      int           // messages buffered per client (default 64)
	WriteTimeout   time.Duration // per write or ping (default 5s)
	PingInterval   time.Duration // keepalive (default 30s)
	MaxClients     int           // connections accepted (default 10000)
	OriginPatterns []string      // extra allowed Origin hosts (same host is always allowed)
	OnClients      func(n int)   // called (never under the hub's lock) after the client count changes
	OnDrop         func()        // called (never under the hub's lock) when a slow client is dropped
	Logger         *slog.Logger
}

// Hub holds the connected clients of one replica.
//
// Callbacks run after mu is released, so a slow or re-entrant callback
// (one that calls Clients, say) cannot stall or deadlock the fan-out.
type Hub struct {
	o       Options
	mu      sync.Mutex
	clients map[*client]struct{}
	closed  bool
	count   atomic.Int64 // len(clients), readable without mu
	// notifyMu orders OnClients calls: each reads count under it, so the
	// last call always reports the latest count.
	notifyMu sync.Mutex
}

type client struct {
	msgs      chan []byte
	closeSlow func()
}

// New returns an empty hub.
func New(o Options) *Hub {
	if o.QueueSize <= 0 {
		o.QueueSize = 64
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 5 * time.Second
	}
	if o.PingInterval <= 0 {
		o.PingInterval = 30 * time.Second
	}
	if o.MaxClients <= 0 {
		o.MaxClients = 10000
	}
	if o.OnClients == nil {
		o.OnClients = func(int) {}
	}
	if o.OnDrop == nil {
		o.OnDrop = func() {}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Hub{o: o, clients: map[*client]struct{}{}}
}

// Broadcast queues msg for every client without blocking; clients whose
// queue is full are dropped.
func (h *Hub) Broadcast(msg []byte) {
	var slow []*client
	h.mu.Lock()
	for c := range h.clients {
		select {
		case c.msgs <- msg:
		default:
			h.removeLocked(c)
			slow = append(slow, c)
		}
	}
	h.mu.Unlock()
	if len(slow) == 0 {
		return
	}
	h.notifyClients()
	for _, c := range slow {
		h.o.OnDrop()
		go c.closeSlow()
	}
}

// Clients returns the number of connected clients.
func (h *Hub) Clients() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.clients)
}

// Close disconnects every client and refuses new ones.
func (h *Hub) Close() {
	h.mu.Lock()
	h.closed = true
	for c := range h.clients {
		h.removeLocked(c)
		close(c.msgs)
	}
	h.mu.Unlock()
	h.notifyClients()
}

func (h *Hub) removeLocked(c *client) {
	delete(h.clients, c)
	h.count.Store(int64(len(h.clients)))
}

func (h *Hub) notifyClients() {
	h.notifyMu.Lock()
	defer h.notifyMu.Unlock()
	h.o.OnClients(int(h.count.Load()))
}

func (h *Hub) add(c *client) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return errors.New("hub closed")
	}
	if len(h.clients) >= h.o.MaxClients {
		h.mu.Unlock()
		return errors.New("too many clients")
	}
	h.clients[c] = struct{}{}
	h.count.Store(int64(len(h.clients)))
	h.mu.Unlock()
	h.notifyClients()
	return nil
}

func (h *Hub) remove(c *client) {
	h.mu.Lock()
	_, ok := h.clients[c]
	if ok {
		h.removeLocked(c)
	}
	h.mu.Unlock()
	if ok {
		h.notifyClients()
	}
}

// ServeHTTP upgrades the request to a WebSocket and streams broadcasts to it
// until the client goes away, is too slow, or the hub closes.
func (h *Hub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{OriginPatterns: h.o.OriginPatterns})
	if err != nil {
		return // Accept has written the error response (403 for a bad origin).
	}
	defer conn.CloseNow()
	c := &client{msgs: make(chan []byte, h.o.QueueSize)}
	c.closeSlow = func() { _ = conn.Close(websocket.StatusPolicyViolation, "client too slow to keep up") }
	if err := h.add(c); err != nil {
		_ = conn.Close(websocket.StatusTryAgainLater, err.Error())
		return
	}
	defer h.remove(c)
	// The client sends nothing; CloseRead handles pings, pongs and close frames.
	ctx := conn.CloseRead(r.Context())
	ping := time.NewTicker(h.o.PingInterval)
	defer ping.Stop()
	for {
		select {
		case msg, ok := <-c.msgs:
			if !ok {
				_ = conn.Close(websocket.StatusGoingAway, "server shutting down")
				return
			}
			if err := h.write(ctx, conn, msg); err != nil {
				return
			}
		case <-ping.C:
			pctx, cancel := context.WithTimeout(ctx, h.o.WriteTimeout)
			err := conn.Ping(pctx)
			cancel()
			if err != nil {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

func (h *Hub) write(ctx context.Context, conn *websocket.Conn, msg []byte) error {
	ctx, cancel := context.WithTimeout(ctx, h.o.WriteTimeout)
	defer cancel()
	return conn.Write(ctx, websocket.MessageText, msg)
}
