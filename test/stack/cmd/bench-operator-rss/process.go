package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/crowsnest-dev/crowsnest/test/stack/internal/proc"
)

// operatorProcess is an operator binary running as a child in its own
// process group, with a sampler reading its /proc entries every second.
type operatorProcess struct {
	Name       string
	MetricsURL string
	PprofURL   string // http://host:port of --pprof-bind-address; empty when not served
	Log        string
	Started    time.Time
	Samples    *sampler

	cmd  *exec.Cmd
	done chan struct{}
	err  error // Wait's result, once done is closed
}

// operatorFlags lists the flags a binary's --help shows, so that each
// build gets only the flags it knows (--max-concurrent-scans is new).
func operatorFlags(ctx context.Context, bin string) (map[string]bool, error) {
	out, _ := exec.CommandContext(ctx, bin, "--help").CombinedOutput() // exits 0 or 2 by version
	flags := map[string]bool{}
	for _, m := range flagLine.FindAllStringSubmatch(string(out), -1) {
		flags[m[1]] = true
	}
	if !flags["results-api-url"] {
		return nil, fmt.Errorf("%s --help lists no --results-api-url:\n%s", bin, out)
	}
	return flags, nil
}

var flagLine = regexp.MustCompile(`(?m)^\s+--?([a-z0-9][a-z0-9-]*)`)

// startOperator runs bin with the bench's flags plus extra, logging to
// logDir/name.log, and waits for /readyz. The process gets SIGKILL if the
// bench dies (Pdeathsig) and SIGTERM to its group when ctx ends.
func startOperator(ctx context.Context, name, bin, kubeconfig, logDir string, env, extra []string) (*operatorProcess, error) {
	metricsPort, err := proc.FreePort()
	if err != nil {
		return nil, err
	}
	probePort, err := proc.FreePort()
	if err != nil {
		return nil, err
	}
	args := append([]string{
		"--metrics-bind-address=127.0.0.1:" + strconv.Itoa(metricsPort),
		"--metrics-secure=false", // loopback only
		"--health-probe-bind-address=127.0.0.1:" + strconv.Itoa(probePort),
		"--log-format=json",
	}, extra...)
	logPath := filepath.Join(logDir, name+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	defer f.Close() // the child has its own descriptor
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(append(os.Environ(), "KUBECONFIG="+kubeconfig), env...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = 20 * time.Second
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &operatorProcess{Name: name, Log: logPath, Started: time.Now(), cmd: cmd, done: make(chan struct{}),
		MetricsURL: fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort)}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	p.Samples = startSampler(cmd.Process.Pid, p.done)
	ready := proc.HTTPOK(fmt.Sprintf("http://127.0.0.1:%d/readyz", probePort))
	deadline := time.Now().Add(2 * time.Minute)
	for ready(ctx) != nil {
		select {
		case <-p.done:
			return nil, fmt.Errorf("%s exited before it was ready (see %s): %w", name, logPath, p.err)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			_ = p.Stop()
			return nil, fmt.Errorf("%s not ready after 2m (see %s)", name, logPath)
		}
	}
	return p, nil
}

// Pid is the operator's process id.
func (p *operatorProcess) Pid() int { return p.cmd.Process.Pid }

// Exited reports whether the process has ended.
func (p *operatorProcess) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Stop sends SIGTERM to the process group, SIGKILL after 20 s, and returns
// an error unless the operator exited with status 0 on SIGTERM. A second
// call returns the same result.
func (p *operatorProcess) Stop() error {
	if !p.Exited() {
		_ = syscall.Kill(-p.Pid(), syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(20 * time.Second):
			_ = syscall.Kill(-p.Pid(), syscall.SIGKILL)
			<-p.done
			return fmt.Errorf("%s ignored SIGTERM for 20s and was killed", p.Name)
		}
	}
	if p.err != nil {
		return fmt.Errorf("%s exited uncleanly (see %s): %w", p.Name, p.Log, p.err)
	}
	return nil
}

// Scrape reads the operator's /metrics.
func (p *operatorProcess) Scrape(ctx context.Context) (metrics, error) {
	return scrape(ctx, p.MetricsURL)
}

var metricsClient = &http.Client{Timeout: 10 * time.Second}

// SaveMetrics writes the operator's /metrics as served, next to its log
// (<name>-<label>.metrics), for a look at every counter after the run.
func (p *operatorProcess) SaveMetrics(ctx context.Context, label string) error {
	return p.save(ctx, metricsClient, p.MetricsURL, label+".metrics")
}

// SaveProfile writes the operator's /debug/pprof/<which> (which may carry
// a query) next to its log as <name>-<label>.pprof; it needs PprofURL.
func (p *operatorProcess) SaveProfile(ctx context.Context, which, label string) error {
	if p.PprofURL == "" {
		return errors.New("no pprof endpoint")
	}
	return p.save(ctx, &http.Client{Timeout: 5 * time.Minute}, p.PprofURL+"/debug/pprof/"+which, label+".pprof")
}

func (p *operatorProcess) save(ctx context.Context, c *http.Client, url, suffix string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	return os.WriteFile(strings.TrimSuffix(p.Log, ".log")+"-"+suffix, body, 0o600)
}

func scrape(ctx context.Context, url string) (metrics, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := metricsClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return parseMetrics(resp.Body)
}

// errStopped is returned by waits that see the operator exit.
var errStopped = errors.New("operator exited")
