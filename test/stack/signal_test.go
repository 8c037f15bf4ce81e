package stack

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

const envSignalChild = "CROWSNEST_STACK_SIGNAL_CHILD"

// TestCloseOnSignal: SIGTERM to a process watching with CloseOnSignal runs
// the stack's closers (what removes containers, mounts and links) and
// exits 1; after stop, SIGTERM kills the process as before and closes
// nothing. The stack is a bare Stack whose one closer logs to stderr, as
// the node's teardown does, then writes a file.
//
// "reader gone" is how a CI run stops the end-to-end suites: SIGTERM to
// the whole process group, so go test, which reads the test binary's
// output through a pipe, dies first; the closers must still run. Before
// outliveOutputReader the child's first write to stderr killed it with
// SIGPIPE, and a stopped run left the real node's shims, mounts and veths.
func TestCloseOnSignal(t *testing.T) {
	if marker := os.Getenv(envSignalChild); marker != "" {
		signalChild(marker, os.Getenv(envSignalChild+"_STOP") != "")
		return
	}
	for _, tc := range []struct {
		name       string
		stop       bool
		readerGone bool
		wantClosed bool
	}{
		{"watching", false, false, true},
		{"reader gone", false, true, true},
		{"stopped", true, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			marker := filepath.Join(t.TempDir(), "closed")
			cmd := exec.Command(os.Args[0], "-test.run", "^TestCloseOnSignal$")
			cmd.Env = append(os.Environ(), envSignalChild+"="+marker)
			if tc.stop {
				cmd.Env = append(cmd.Env, envSignalChild+"_STOP=1")
			}
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
			line, err := bufio.NewReader(out).ReadString('\n')
			if err != nil || line != "ready\n" {
				_ = cmd.Process.Kill()
				t.Fatalf("child said %q, %v", line, err)
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
				t.Fatalf("closers ran: %v, want %v (exit %v)", closed, tc.wantClosed, ws)
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
func signalChild(marker string, stopFirst bool) {
	s := &Stack{}
	s.closers = append(s.closers, func() {
		_, _ = os.Stderr.WriteString("closing\n")
		_ = os.WriteFile(marker, []byte("closed"), 0o600)
	})
	stop := s.CloseOnSignal()
	if stopFirst {
		stop()
	}
	_, _ = os.Stdout.WriteString("ready\n")
	time.Sleep(30 * time.Second)
	os.Exit(3)
}
