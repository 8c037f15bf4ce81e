package resultsapitest

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/test/support"
	"github.com/crowsnest-dev/crowsnest/test/support/pgtest"
)

// Option configures Start.
type Option func(*config)

type config struct {
	natsURL     string
	maxBOMBytes int64
}

// WithNATS connects the API to the NATS server at url (--nats-url).
func WithNATS(url string) Option { return func(c *config) { c.natsURL = url } }

// WithMaxBOMBytes sets the decompressed BOM size limit (--max-bom-bytes).
func WithMaxBOMBytes(n int64) Option { return func(c *config) { c.maxBOMBytes = n } }

// Server is a running results-api process.
type Server struct {
	URL         string // http://127.0.0.1:PORT, no trailing slash
	Token       string // the admin token: allowed to write
	DatabaseURL string

	t    testing.TB
	cfg  config
	bin  string
	addr string
	logs support.Buffer // every run's output, for the test log on failure

	mu   sync.Mutex
	proc *process
	runs int
}

// process is one run of the binary.
type process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once it exited and was waited for
	err  error         // its exit status, set before done closes
}

// startTimeout bounds one start: migrations on a fresh database, then
// /readyz.
const startTimeout = 60 * time.Second

// Start runs results-api until the test ends.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	bin, err := binary()
	if err != nil {
		t.Fatalf("resultsapitest: %v", err)
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	s := &Server{t: t, bin: bin, Token: hex.EncodeToString(b[:]), DatabaseURL: pgtest.NewDatabase(t)}
	for _, o := range opts {
		o(&s.cfg)
	}
	// Cleanups run last-in first-out: the process stops (Close), then its
	// logs are written out, then pgtest drops the database.
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("results-api logs:\n%s", tail(s.logs.String(), 64<<10))
		}
	})
	t.Cleanup(s.Close)
	// A free port can be taken between our probe and the child's listen:
	// then try another one.
	for attempt := 1; ; attempt++ {
		if s.addr, err = freeAddr(); err != nil {
			t.Fatalf("resultsapitest: %v", err)
		}
		s.URL = "http://" + s.addr
		err = s.start()
		if err == nil {
			return s
		}
		if !errors.Is(err, errAddrInUse) || attempt == 3 {
			t.Fatalf("resultsapitest: start: %v", err)
		}
	}
}

// Close stops the API (SIGTERM, as Kubernetes stops it; SIGKILL after
// 10s) and waits for the process: its address refuses connections until
// Restart. It is safe to call more than once.
func (s *Server) Close() {
	s.mu.Lock()
	p := s.proc
	s.proc = nil
	s.mu.Unlock()
	if p == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// Restart brings the API back on the same address with the same database
// (it closes a running one first).
func (s *Server) Restart() {
	s.t.Helper()
	s.Close()
	// The address was ours a moment ago; a client's connection in
	// TIME_WAIT does not block listening on it, but retry a short while
	// in case another process raced for the port.
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := s.start()
		if err == nil {
			return
		}
		if !errors.Is(err, errAddrInUse) || time.Now().After(deadline) {
			s.t.Fatalf("resultsapitest: restart on %s: %v", s.addr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Client returns an HTTP client with a timeout for talking to the server.
func (s *Server) Client() *http.Client { return &http.Client{Timeout: 30 * time.Second} }

var errAddrInUse = errors.New("address already in use")

// start runs the binary on s.addr and waits until /readyz answers 200.
// Secrets go through the environment, as the binary documents
// (CROWSNEST_DATABASE_URL, CROWSNEST_ADMIN_TOKEN), never the command line,
// which every local user can read in /proc.
func (s *Server) start() error {
	args := []string{
		"--listen", s.addr,
		"--log-format", "text",
		// As results-api's in-process harness: reads open, no retention
		// sweep or vulnerability-metrics refresh in the background.
		"--read-auth", "open",
		"--report-retention", "0",
		"--vuln-metrics-interval", "0",
		"--shutdown-timeout", "5s",
	}
	if s.cfg.natsURL != "" {
		args = append(args, "--nats-url", s.cfg.natsURL)
	}
	if s.cfg.maxBOMBytes > 0 {
		args = append(args, "--max-bom-bytes", strconv.FormatInt(s.cfg.maxBOMBytes, 10))
	}
	cmd := exec.Command(s.bin, args...)
	cmd.Env = append(environ(), "CROWSNEST_DATABASE_URL="+s.DatabaseURL, "CROWSNEST_ADMIN_TOKEN="+s.Token)
	s.mu.Lock()
	s.runs++
	fmt.Fprintf(&s.logs, "=== run %d on %s\n", s.runs, s.addr)
	s.mu.Unlock()
	cmd.Stdout, cmd.Stderr = &s.logs, &s.logs
	// It dies with the test process, even one killed by SIGKILL.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return err
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		fmt.Fprintf(&s.logs, "=== exited: %v\n", p.err)
		close(p.done)
	}()
	if err := s.waitReady(p); err != nil {
		_ = cmd.Process.Kill()
		<-p.done
		return err
	}
	s.mu.Lock()
	s.proc = p
	s.mu.Unlock()
	return nil
}

// waitReady polls /readyz until it answers 200, the process exits or
// startTimeout passes.
func (s *Server) waitReady(p *process) error {
	c := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(startTimeout)
	for {
		select {
		case <-p.done:
			if strings.Contains(s.logs.String(), "address already in use") {
				return fmt.Errorf("%s: %w", s.addr, errAddrInUse)
			}
			return fmt.Errorf("results-api exited during start (%w); logs:\n%s", p.err, tail(s.logs.String(), 16<<10))
		default:
		}
		if resp, err := c.Get(s.URL + "/readyz"); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("results-api not ready on %s after %v; logs:\n%s", s.addr, startTimeout, tail(s.logs.String(), 16<<10))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// environ is this process's environment without CROWSNEST_* variables, so
// the test's own settings (a CROWSNEST_LISTEN, a token) never configure
// the child.
func environ() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CROWSNEST_") {
			env = append(env, kv)
		}
	}
	return env
}

// freeAddr is a 127.0.0.1 address with a port nothing listens on now.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := ln.Addr().String()
	return addr, ln.Close()
}

// tail is the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "[…]\n" + s[len(s)-n:]
}
