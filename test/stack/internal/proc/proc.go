package proc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Spec describes one process.
type Spec struct {
	Name   string   // short name, also the log file name
	Binary string   // path of the executable
	Args   []string // arguments
	Env    []string // extra KEY=VALUE entries on top of the stack's environment
	LogDir string   // where <name>.log goes
	Dir    string   // working directory; empty: the stack's
}

// Process is a running child.
type Process struct {
	Spec Spec
	Log  string // path of the log file

	cmd  *exec.Cmd
	done chan struct{}
	mu   sync.Mutex
	err  error
}

// Start launches the process. Its stdout and stderr go to LogDir/Name.log.
func Start(s Spec) (*Process, error) {
	if _, err := os.Stat(s.Binary); err != nil {
		return nil, fmt.Errorf("%s: binary %s: %w", s.Name, s.Binary, err)
	}
	logPath := filepath.Join(s.LogDir, s.Name+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("%s: open log: %w", s.Name, err)
	}
	cmd := exec.Command(s.Binary, s.Args...)
	cmd.Env = append(os.Environ(), s.Env...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Dir = s.Dir
	// Own process group: Ctrl-C reaches only the stack, which stops the
	// children in order. Pdeathsig: a killed stack leaves no orphans.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("start %s: %w", s.Name, err)
	}
	p := &Process{Spec: s, Log: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		_ = f.Close()
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(p.done)
	}()
	return p, nil
}

// Pid returns the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is the exit error once Done is closed.
func (p *Process) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Stop sends SIGTERM, waits up to grace, then SIGKILLs. It returns nil when
// the process ended because of the signal.
func (p *Process) Stop(grace time.Duration) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	return nil
}

// Kill ends the process at once (SIGKILL), like a crash.
func (p *Process) Kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// WaitReady polls check until it succeeds, the process exits, or ctx ends.
func (p *Process) WaitReady(ctx context.Context, timeout time.Duration, check func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		if last = check(ctx); last == nil {
			return nil
		}
		select {
		case <-p.done:
			// The log's end goes into the error: a failed start removes the
			// state directory, and CI keeps only what the test printed.
			return fmt.Errorf("%s exited before it was ready (%s ends with:\n%s): %w", p.Spec.Name, p.Log, LogTail(p.Log, 10), p.Err())
		case <-ctx.Done():
			return fmt.Errorf("%s not ready after %s (see %s): %w", p.Spec.Name, timeout, p.Log, errors.Join(last, ctx.Err()))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// LogTail returns the last n lines of the log at path (at most its last
// 8 KiB), indented, or why it cannot.
func LogTail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return "  (" + err.Error() + ")"
	}
	defer f.Close()
	const maxTail = 8 << 10
	var start int64
	if fi, err := f.Stat(); err == nil && fi.Size() > maxTail {
		start = fi.Size() - maxTail
	}
	b := make([]byte, maxTail)
	k, err := f.ReadAt(b, start)
	if err != nil && !errors.Is(err, io.EOF) {
		return "  (" + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b[:k]), "\n"), "\n")
	if start > 0 && len(lines) > 1 {
		lines = lines[1:] // the first may be cut
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "  " + strings.Join(lines, "\n  ")
}
