package proc

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// FreePort returns a free TCP port on 127.0.0.1 that the kernel does not
// hand out by itself: one below its ephemeral range (and below the
// Kubernetes NodePort range), in [stableLow, stableHigh). The stack's
// services keep their ports across restarts (clients reconnect to the
// same address), and a port from the ephemeral range can be taken while
// its service is down by any outgoing connection or port-0 listener on
// the machine: a CI run lost its NATS that way (its monitor port, 2
// minutes into an outage, "bind: address already in use", with the other
// suites' test servers running beside it). Where the machine's ephemeral
// range leaves no room below it, a port-0 port as before.
func FreePort() (int, error) {
	lo, hi := stableRange(ephemeralLow())
	for range 200 {
		if hi <= lo {
			break
		}
		p := lo + rand.IntN(hi-lo)
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			continue // in use: another
		}
		_ = ln.Close()
		return p, nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// The stable ports: above the well-known and Kubernetes ports (the
// kubelet's 10248-10256), below the NodePort range (30000-32767).
const (
	stableLow  = 20000
	stableHigh = 30000
)

// stableRange is [stableLow, stableHigh) cut below the first ephemeral
// port.
func stableRange(ephemeral int) (lo, hi int) {
	return stableLow, min(stableHigh, ephemeral)
}

// ephemeralLow is the first port of the kernel's ephemeral range
// (Linux's default 32768 when it cannot be read).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 32768
	}
	lo, err := strconv.Atoi(f[0])
	if err != nil {
		return 32768
	}
	return lo
}

// HTTPOK returns a readiness check that wants 200 from url.
func HTTPOK(url string) func(context.Context) error {
	client := &http.Client{Timeout: 2 * time.Second}
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s", url, resp.Status)
		}
		return nil
	}
}

// TCPOpen returns a readiness check that wants addr to accept connections.
func TCPOpen(addr string) func(context.Context) error {
	return func(ctx context.Context) error {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		return c.Close()
	}
}
