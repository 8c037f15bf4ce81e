package procstat

import (
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

func TestFieldsOfThisProcess(t *testing.T) {
	f, ok := Fields(os.Getpid())
	if !ok {
		t.Fatal("no stat for this process")
	}
	if f[1] != strconv.Itoa(os.Getppid()) {
		t.Fatalf("parent %q, want %d", f[1], os.Getppid())
	}
	if !Running(os.Getpid()) || Start(os.Getpid()) == "" {
		t.Fatal("this process is not running, or has no start time")
	}
}

// A command name with spaces and parentheses does not shift the fields.
func TestFieldsOfAStrangeName(t *testing.T) {
	dir := t.TempDir()
	exe := dir + "/a) b (c"
	if err := os.Symlink("/bin/sleep", exe); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	f, ok := Fields(cmd.Process.Pid)
	if !ok || f[1] != strconv.Itoa(os.Getpid()) {
		t.Fatalf("fields %q: parent is not this process", f)
	}
	if !Running(cmd.Process.Pid) || Start(cmd.Process.Pid) == "" {
		t.Fatal("the child is not running, or has no start time")
	}
}

// A zombie (exited, not yet waited for) is not running; a waited-for
// process is gone.
func TestZombieAndGone(t *testing.T) {
	cmd := exec.Command("/bin/true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	for range 200 {
		if f, ok := Fields(pid); ok && f[0] == "Z" {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if Running(pid) {
		t.Fatal("a zombie counts as running")
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if Running(pid) || Start(pid) != "" {
		t.Fatal("a process that is gone counts as running")
	}
}
