package teardown

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

const envSignalChild = "CROWSNEST_TEARDOWN_SIGNAL_CHILD"

// TestOnSignal: SIGTERM to a process that watches runs what it must
// remove (a step that logs to stderr, as the node's teardown does, then
// writes a file) and exits 1; after stop, SIGTERM kills the process as
// before and removes nothing.
//
// "reader gone" is how a CI run stops the end-to-end suites: SIGTERM to
// the whole process group, so go test, which reads the test binary's
// output through a pipe, dies first; the steps must still run. Before
// OutliveOutputReader the child's first write to stderr killed it with
// SIGPIPE, and a stopped run left the real node's shims, mounts and veths.
// "a test's steps" is ForTest, which the node's package tests use.
func TestOnSignal(t *testing.T) {
	if marker := os.Getenv(envSignalChild); marker != "" {
		signalChild(t, marker, os.Getenv(envSignalChild+"_MODE"))
		return
	}
	for _, tc := range []struct {
		name, mode string
		readerGone bool
		wantClosed bool
	}{
		{"watching", "watch", false, true},
		{"reader gone", "watch", true, true},
		{"a test's steps", "test", false, true},
		{"a test's steps, reader gone", "test", true, true},
		{"stopped", "stopped", false, false},
		// The SIGTERM comes while the test's own teardown runs (its
		// step takes a moment after saying "closing"): the step must
		// finish, not be cut off by the signal's default action.
		{"while the steps run", "ending", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			marker := filepath.Join(t.TempDir(), "closed")
			cmd := exec.Command(os.Args[0], "-test.run", "^TestOnSignal$")
			cmd.Env = append(os.Environ(), envSignalChild+"="+marker, envSignalChild+"_MODE="+tc.mode)
			// The child's stdout and stderr are one pipe, as go test
			// gives a test binary.
			out, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer out.Close()
			cmd.Stdout, cmd.Stderr = w, w
			err = cmd.Start()
			_ = w.Close()
			if err != nil {
				t.Fatal(err)
			}
			rd := bufio.NewReader(out)
			line, err := rd.ReadString('\n')
			if err != nil || line != "ready\n" {
				_ = cmd.Process.Kill()
				t.Fatalf("child said %q, %v", line, err)
			}
			if tc.mode == "ending" {
				if line, err := rd.ReadString('\n'); err != nil || line != "closing\n" {
					_ = cmd.Process.Kill()
					t.Fatalf("child said %q, %v; want it closing", line, err)
				}
			}
			if tc.readerGone {
				_ = out.Close()
			}
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			err = cmd.Wait()
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				t.Fatalf("child ended with %v, want a non-zero exit", err)
			}
			ws := exit.Sys().(syscall.WaitStatus)
			_, statErr := os.Stat(marker)
			closed := statErr == nil
			if closed != tc.wantClosed {
				t.Fatalf("steps ran: %v, want %v (exit %v)", closed, tc.wantClosed, ws)
			}
			if tc.wantClosed && (ws.Signaled() || ws.ExitStatus() != 1) {
				t.Fatalf("child exit %v, want status 1 after closing", ws)
			}
			if !tc.wantClosed && (!ws.Signaled() || ws.Signal() != syscall.SIGTERM) {
				t.Fatalf("child exit %v, want killed by SIGTERM once the watch stopped", ws)
			}
		})
	}
}

// signalChild is the watched process: it says ready, then waits for the
// parent's SIGTERM (exit 3 if none comes).
func signalChild(t *testing.T, marker, mode string) {
	remove := func() error {
		_, _ = os.Stderr.WriteString("closing\n")
		return os.WriteFile(marker, []byte("closed"), 0o600)
	}
	switch mode {
	case "ending":
		ForTest(t).Add(func() error {
			_, _ = os.Stderr.WriteString("closing\n")
			time.Sleep(time.Second) // the parent's SIGTERM comes now
			return os.WriteFile(marker, []byte("closed"), 0o600)
		})
		_, _ = os.Stdout.WriteString("ready\n")
		return // the test ends: its cleanup runs the step
	case "test":
		ForTest(t).Add(remove)
	default:
		stop := OnSignal(func() { _ = remove() })
		if mode == "stopped" {
			stop()
		}
	}
	_, _ = os.Stdout.WriteString("ready\n")
	time.Sleep(30 * time.Second)
	os.Exit(3)
}
