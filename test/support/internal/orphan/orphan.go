// Package orphan checks that processes a test helper starts die with the
// process that started them: the test re-runs its own binary as a child that
// starts them and prints their pids, kills that child with SIGKILL (as
// `go test -timeout` ends a binary: no deferred stop runs), and counts the
// survivors.
package orphan

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/test/support/internal/procstat"
)

// ChildEnv marks the re-run binary.
const ChildEnv = "CROWSNEST_ORPHAN_CHILD"

// IsChild tells a test it runs as the child.
func IsChild() bool { return os.Getenv(ChildEnv) != "" }

// Children are the running processes whose parent is this process.
func Children() []int {
	dirs, _ := os.ReadDir("/proc")
	self := os.Getpid()
	var out []int
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		f, ok := procstat.Fields(pid) // state, ppid, ...
		if ok && len(f) > 1 && f[0] != "Z" && f[1] == strconv.Itoa(self) {
			out = append(out, pid)
		}
	}
	return out
}

// Report is the child's side: it prints the pids and waits to be killed.
func Report(pids []int) {
	for _, p := range pids {
		fmt.Printf("pid %d\n", p)
	}
	fmt.Println("ready")
	time.Sleep(time.Hour)
}

// Check runs test (a test function name) as the child, SIGKILLs it once it
// reported, and fails t unless every reported process is gone within 15s.
// The child's TMPDIR is a directory Check removes afterwards.
func Check(t *testing.T, test string) {
	t.Helper()
	// The killed child cannot remove its temporary files (etcd's data, a
	// Postgres cluster: 40-120 MB each), so it makes them under a directory
	// this test removes once the processes are gone. Traversable: the
	// child's Postgres runs as another user.
	tmp, err := os.MkdirTemp("", "crowsnest-orphan-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(tmp) })
	if err := os.Chmod(tmp, 0o755); err != nil { //nolint:gosec // holds only other temporary directories
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), ChildEnv+"=1", "TMPDIR="+tmp)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pids []int
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := sc.Text()
		if line == "ready" {
			break
		}
		if p, ok := strings.CutPrefix(line, "pid "); ok {
			n, err := strconv.Atoi(p)
			if err != nil {
				t.Fatal(err)
			}
			pids = append(pids, n)
		}
	}
	if len(pids) == 0 {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatal("the child reported no processes")
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	deadline := time.Now().Add(15 * time.Second)
	for {
		var alive []int
		for _, p := range pids {
			if running(p) {
				alive = append(alive, p)
			}
		}
		if len(alive) == 0 {
			if left, _ := os.ReadDir(tmp); len(left) == 0 {
				t.Error("the child made no temporary files under TMPDIR: they are elsewhere, and left behind")
			}
			return
		}
		if time.Now().After(deadline) {
			for _, p := range alive {
				_ = syscall.Kill(p, syscall.SIGKILL)
			}
			t.Fatalf("%d of %d processes outlived their SIGKILLed parent: %v", len(alive), len(pids), alive)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// running: the pid exists and is not a zombie.
func running(pid int) bool { return procstat.Running(pid) }
