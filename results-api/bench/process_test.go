package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// apiProcess is the results-api binary, built from ../cmd/results-api as
// it ships, running as a child process: its memory is its own, not
// shared with the benchmark's clients.
type apiProcess struct {
	URL   string
	Token string
	cmd   *exec.Cmd
	done  chan error // Wait's result

	mu      sync.Mutex
	peakRSS int64 // sampled VmRSS, bytes
	stop    chan struct{}
	sampled sync.WaitGroup
}

// startAPI builds the binary (or takes the one CROWSNEST_BENCH_RESULTS_API
// names, to compare builds) and starts it on a free loopback port with
// args (besides --listen and --database-url) and env added to this
// process's environment; it stops it when b ends.
func startAPI(b *testing.B, dsn string, env []string, args ...string) *apiProcess {
	b.Helper()
	bin := os.Getenv("CROWSNEST_BENCH_RESULTS_API")
	if bin == "" {
		bin = filepath.Join(b.TempDir(), "results-api")
		// The flags of make build-results-api, so that the packages
		// compiled for the binary are shared with it in Go's build cache.
		build := exec.Command("go", "build", "-trimpath", "-o", bin, "./cmd/results-api")
		build.Dir = ".."
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			b.Fatalf("build results-api: %v\n%s", err, out)
		}
	}
	p := &apiProcess{Token: "bench-admin-token-0123456789", done: make(chan error, 1), stop: make(chan struct{})}
	p.cmd = exec.Command(bin, append([]string{"--listen", "127.0.0.1:0", "--database-url", dsn, "--read-auth=open"}, args...)...)
	p.cmd.Env = append(append(os.Environ(), "CROWSNEST_ADMIN_TOKEN="+p.Token), env...)
	p.cmd.Stderr = os.Stderr
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		b.Fatalf("start results-api: %v", err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	b.Cleanup(p.close)

	addr := make(chan string, 1)
	go func() { // read the logs until the process ends, or its stdout blocks it
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var rec struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Msg == "serving" {
				addr <- rec.Addr
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case a := <-addr:
		p.URL = "http://" + a
	case err := <-p.done:
		b.Fatalf("results-api exited before serving: %v", err)
	case <-time.After(2 * time.Minute):
		b.Fatal("results-api did not start within 2 minutes")
	}
	p.sampled.Go(p.sample)
	return p
}

// sample records the highest VmRSS seen every 10 ms until close.
func (p *apiProcess) sample() {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		if rss, err := p.status("VmRSS"); err == nil {
			p.mu.Lock()
			p.peakRSS = max(p.peakRSS, rss)
			p.mu.Unlock()
		}
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
	}
}

// status reads one "kB" field of /proc/PID/status, in bytes.
func (p *apiProcess) status(field string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, p.cmd.Process.Pid)
}

// Peak returns the kernel's high-water mark of the process's RSS (VmHWM)
// and the highest VmRSS sampled; the first is authoritative.
func (p *apiProcess) Peak() (hwm, sampled int64, err error) {
	hwm, err = p.status("VmHWM")
	p.mu.Lock()
	defer p.mu.Unlock()
	return hwm, p.peakRSS, err
}

// close stops the process with SIGTERM (SIGKILL after 30 s) and the
// sampler.
func (p *apiProcess) close() {
	select {
	case <-p.stop:
		return
	default:
		close(p.stop)
	}
	p.sampled.Wait()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var err error
	select {
	case err = <-p.done:
	case <-ctx.Done():
		_ = p.cmd.Process.Kill()
		err = <-p.done
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		fmt.Fprintln(os.Stderr, "results-api:", err)
	}
}
