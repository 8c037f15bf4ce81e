// Package proxy is the stack's stand-in for a Kubernetes Service in front of
// several results-api replicas: a TCP proxy on one loopback address that
// spreads connections round-robin over the backends and skips one that
// refuses connections (a killed replica), as kube-proxy does once the
// endpoint is gone. Connections already open to a backend that dies are cut,
// as they would be in a cluster.
package proxy

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Proxy forwards connections to its backends.
type Proxy struct {
	ln       net.Listener
	backends []string
	next     atomic.Uint64
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    map[net.Conn]struct{}
	closed   bool
}

// Start listens on addr ("127.0.0.1:0" for any free port) and forwards to
// backends (host:port) until Close.
func Start(addr string, backends []string) (*Proxy, error) {
	if len(backends) == 0 {
		return nil, errors.New("proxy: no backends")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, backends: backends, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

// Addr is the address clients connect to.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Close stops accepting, cuts every open connection and waits for the
// forwarding goroutines to end.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	_ = p.ln.Close()
	p.wg.Wait()
}

func (p *Proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		p.wg.Add(1)
		go p.forward(c)
	}
}

// dial connects to the next backend that accepts, trying each once.
func (p *Proxy) dial() (net.Conn, error) {
	start := p.next.Add(1)
	var last error
	for i := range uint64(len(p.backends)) {
		b := p.backends[(start+i)%uint64(len(p.backends))]
		c, err := net.DialTimeout("tcp", b, 2*time.Second)
		if err == nil {
			return c, nil
		}
		last = err
	}
	return nil, last
}

func (p *Proxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
	return true
}

func (p *Proxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		delete(p.conns, c)
		_ = c.Close()
	}
}

func (p *Proxy) forward(client net.Conn) {
	defer p.wg.Done()
	backend, err := p.dial()
	if err != nil {
		_ = client.Close() // no backend: the client sees a reset, as with no endpoints
		return
	}
	if !p.track(client, backend) {
		_ = client.Close()
		_ = backend.Close()
		return
	}
	defer p.untrack(client, backend)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		cancel() // one side ended: end both, like a proxied TCP connection
	}
	go pipe(backend, client)
	go pipe(client, backend)
	<-ctx.Done()
}
