package hub

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// Options tune the hub. Zero values get defaults.
type Options struct {
	QueueSize    int           // messages buffered per client (default 64)
	WriteTimeout time.Duration // per write or ping (default 5s)
	PingInterval time.Duration // keepalive (default 30s)
	MaxClients   int           // connections accepted (default DefaultMaxClients)
	// MaxClientsPerAddr caps the connections from one source address
	// (default DefaultMaxClientsPerAddr).
	MaxClientsPerAddr int
	OriginPatterns    []string    // extra allowed Origin hosts (same host is always allowed)
	OnClients         func(n int) // called (never under the hub's lock) after the client count changes
	OnDrop            func()      // called (never under the hub's lock) when a slow client is dropped
	Logger            *slog.Logger
}

// Defaults of Options. Each client holds a goroutine pair and buffers
// (about 30 KiB), so the total cap is what bounds the hub's memory.
const (
	DefaultMaxClients        = 1000
	DefaultMaxClientsPerAddr = 20
)

// Subprotocol is the WebSocket subprotocol the hub selects when a client
// offers it. A browser that sends its token as a subprotocol
// ("base64url.bearer.authorization.k8s.io.<token>") must offer this one
// too: the server answers with it, never with the token.
const Subprotocol = "crowsnest.v1"

// Refusals, returned by Serve before anything is written so that the
// caller answers them.
var (
	ErrTooManyFromAddr = errors.New("too many WebSocket clients from this address")
	ErrTooManyClients  = errors.New("too many WebSocket clients")
	ErrClosed          = errors.New("hub closed")
)

// Hub holds the connected clients of one replica.
//
// Callbacks run after mu is released, so a slow or re-entrant callback
// (one that calls Clients, say) cannot stall or deadlock the fan-out.
type Hub struct {
	o       Options
	mu      sync.Mutex
	clients map[*client]struct{}
	// admitted counts the connections per source address, from admission
	// (before the upgrade) until the handler returns; admittedTotal their
	// sum. They can exceed clients by the upgrades in progress.
	admitted      map[string]int
	admittedTotal int
	closed        bool
	count         atomic.Int64 // len(clients), readable without mu
	scoped        atomic.Int64 // clients limited to namespaces
	// notifyMu orders OnClients calls: each reads count under it, so the
	// last call always reports the latest count.
	notifyMu sync.Mutex
}

type client struct {
	msgs      chan []byte
	closeSlow func()
	// access is what the client may receive; nil receives everything.
	// Replaced (under the hub's lock) when it is checked again.
	access *Access
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
		o.MaxClients = DefaultMaxClients
	}
	if o.MaxClientsPerAddr <= 0 {
		o.MaxClientsPerAddr = DefaultMaxClientsPerAddr
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
	return &Hub{o: o, clients: map[*client]struct{}{}, admitted: map[string]int{}}
}

// Broadcast queues msg, without blocking, for every client that sees
// everything (every client when none is limited to namespaces); clients
// whose queue is full are dropped.
func (h *Hub) Broadcast(msg []byte) { h.Publish(msg, nil) }

// Publish queues msg, an event about an image running in namespaces, for
// every client whose Access lets it see one of them (clients of the whole
// cluster see every message), without blocking: clients whose queue is
// full are dropped.
func (h *Hub) Publish(msg []byte, namespaces []string) {
	h.publish(namespaces, func(*Access) []byte { return msg })
}

// PublishRedacted is Publish for a message that names a namespace, origin
// (where a scan Job ran), besides the namespaces its image runs in: clients
// of the whole cluster and those whose namespaces include origin receive
// msg; the other clients that see one of namespaces receive redacted, a
// copy without origin's name.
func (h *Hub) PublishRedacted(msg, redacted []byte, namespaces []string, origin string) {
	h.publish(namespaces, func(a *Access) []byte {
		if a.has(origin) {
			return msg
		}
		return redacted
	})
}

// PublishScoped is Publish for a message with parts for clients of the
// whole cluster only: they receive msg; the clients limited to namespaces
// that see one of namespaces receive limited, a copy without those parts.
func (h *Hub) PublishScoped(msg, limited []byte, namespaces []string) {
	h.publish(namespaces, func(a *Access) []byte {
		if a.limited() {
			return limited
		}
		return msg
	})
}

// publish queues, for every client that sees namespaces, the message pick
// chooses for its access.
func (h *Hub) publish(namespaces []string, pick func(*Access) []byte) {
	var slow []*client
	h.mu.Lock()
	for c := range h.clients {
		if !c.access.sees(namespaces) {
			continue
		}
		select {
		case c.msgs <- pick(c.access):
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

// Scoped reports whether some connected client is limited to namespaces,
// so that a publisher knows whether it needs an event's namespaces at all.
func (h *Hub) Scoped() bool { return h.scoped.Load() > 0 }

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
	if c.access.limited() {
		h.scoped.Add(-1)
	}
}

func (h *Hub) notifyClients() {
	h.notifyMu.Lock()
	defer h.notifyMu.Unlock()
	h.o.OnClients(int(h.count.Load()))
}

// admit reserves a connection for addr, counted against both caps until
// the returned release is called.
func (h *Hub) admit(addr string) (release func(), err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.closed:
		return nil, ErrClosed
	case h.admittedTotal >= h.o.MaxClients:
		return nil, ErrTooManyClients
	case h.admitted[addr] >= h.o.MaxClientsPerAddr:
		return nil, ErrTooManyFromAddr
	}
	h.admitted[addr]++
	h.admittedTotal++
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.admittedTotal--
		if h.admitted[addr]--; h.admitted[addr] <= 0 {
			delete(h.admitted, addr)
		}
	}, nil
}

func (h *Hub) add(c *client) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return ErrClosed
	}
	h.clients[c] = struct{}{}
	h.count.Store(int64(len(h.clients)))
	if c.access.limited() {
		h.scoped.Add(1)
	}
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

// ServeHTTP is Serve for the request's peer address, answering a refusal
// in plain text: 429 for the address cap, 503 otherwise.
func (h *Hub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	err := h.Serve(w, r, PeerAddr(r))
	switch {
	case errors.Is(err, ErrTooManyFromAddr):
		http.Error(w, err.Error(), http.StatusTooManyRequests)
	case err != nil:
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
	}
}

// PeerAddr is the host part of r.RemoteAddr: the TCP peer, which behind a
// reverse proxy is the proxy.
func PeerAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// Serve admits a client from addr, upgrades the request to a WebSocket and
// streams broadcasts to it until the client goes away, is too slow, or the
// hub closes. A client over a cap is refused before the upgrade with
// ErrTooManyFromAddr, ErrTooManyClients or ErrClosed, and nothing written;
// every other outcome returns nil with the response handled.
func (h *Hub) Serve(w http.ResponseWriter, r *http.Request, addr string) error {
	return h.ServeAccess(w, r, addr, nil)
}

// ServeAccess is Serve for a client that receives what access lets it see
// (nil: everything). With access.Recheck set, the client's access is
// checked again every access.RecheckEvery and when access.Expires passes:
// a client no longer allowed is closed with 1008 (policy violation).
func (h *Hub) ServeAccess(w http.ResponseWriter, r *http.Request, addr string, access *Access) error {
	release, err := h.admit(addr)
	if err != nil {
		return err
	}
	defer release()
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{OriginPatterns: h.o.OriginPatterns, Subprotocols: []string{Subprotocol}})
	if err != nil {
		return nil // Accept has written the error response (403 for a bad origin).
	}
	defer conn.CloseNow()
	c := &client{msgs: make(chan []byte, h.o.QueueSize), access: access}
	c.closeSlow = func() { _ = conn.Close(websocket.StatusPolicyViolation, "client too slow to keep up") }
	if err := h.add(c); err != nil {
		_ = conn.Close(websocket.StatusGoingAway, err.Error())
		return nil
	}
	defer h.remove(c)
	// The client sends nothing; CloseRead handles pings, pongs and close frames.
	ctx := conn.CloseRead(r.Context())
	ping := time.NewTicker(h.o.PingInterval)
	defer ping.Stop()
	recheck := access.timer(time.Now())
	defer recheck.Stop()
	for {
		select {
		case <-recheck.C:
			next, err := access.Recheck(ctx)
			if err != nil {
				_ = conn.Close(websocket.StatusPolicyViolation, "credentials no longer valid")
				return nil
			}
			h.setAccess(c, next)
			access = next
			recheck.Stop()
			recheck = access.timer(time.Now())
		case msg, ok := <-c.msgs:
			if !ok {
				_ = conn.Close(websocket.StatusGoingAway, "server shutting down")
				return nil
			}
			if err := h.write(ctx, conn, msg); err != nil {
				return nil
			}
		case <-ping.C:
			pctx, cancel := context.WithTimeout(ctx, h.o.WriteTimeout)
			err := conn.Ping(pctx)
			cancel()
			if err != nil {
				return nil
			}
		case <-ctx.Done():
			return nil
		}
	}
}

func (h *Hub) write(ctx context.Context, conn *websocket.Conn, msg []byte) error {
	ctx, cancel := context.WithTimeout(ctx, h.o.WriteTimeout)
	defer cancel()
	return conn.Write(ctx, websocket.MessageText, msg)
}
