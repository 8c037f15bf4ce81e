// Package hostlock takes the machine-wide locks that keep two local stacks
// from writing the same host state at once (kube-proxy's iptables chains,
// kube-router's chains and ipsets): an exclusive flock on a file under Dir
// that holds the holder's pid. The kernel drops the lock when its holder
// exits, so a killed stack never leaves a lock behind.
package hostlock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Dir holds the machine's locks, beside the node networks' (package node).
var Dir = filepath.Join(os.TempDir(), "crowsnest-node-locks")

// ErrBusy: another process (or another Take in this one) holds the lock.
var ErrBusy = errors.New("lock held")

// poll is how often Take tries again while it waits.
var poll = 2 * time.Second

// Lock is a held lock.
type Lock struct {
	f *os.File
}

// Take takes the exclusive lock at path, creating the file and its
// directory when missing. While another holder has it, Take tries again
// every 2 s for up to wait (0: not at all), then returns an error wrapping
// ErrBusy that names the holder's pid; it returns early when ctx ends.
func Take(ctx context.Context, path string, wait time.Duration) (*Lock, error) {
	deadline := time.Now().Add(wait)
	for {
		l, err := try(path)
		if !errors.Is(err, ErrBusy) || !time.Now().Before(deadline) {
			return l, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("wait for %s: %w", path, ctx.Err())
		case <-time.After(poll):
		}
	}
}

func try(path string) (*Lock, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(path)
		_ = f.Close()
		return nil, fmt.Errorf("%w: pid %s holds %s", ErrBusy, strings.TrimSpace(string(holder)), path)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &Lock{f: f}, nil
}

// Release frees the lock; a second call does nothing.
func (l *Lock) Release() {
	if l == nil || l.f == nil {
		return
	}
	_ = l.f.Close() // closing the file drops the flock
	l.f = nil
}

// Held tells whether someone holds the lock at path now.
func Held(path string) bool {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return false
	}
	defer f.Close() // releases the lock if we took it
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil
}
