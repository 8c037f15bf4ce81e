package node

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// A container process its killed shim left behind (reparented to init,
// in its cgroup) is ended by killContainers, and its cgroup removed. Real
// cgroups: a folder of the node's kind (k8s.io/<id>) in the pids
// hierarchy, a real process in it that ignores SIGTERM.
func TestKillContainersEndsWhatAShimLeft(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a cgroup (the real node does too)")
	}
	hier := filepath.Join(cgroupRoot, "pids")
	if _, err := os.Stat(filepath.Join(hier, "cgroup.procs")); err != nil {
		t.Skipf("no cgroup v1 pids hierarchy at %s (this machine's kubelet uses it): %v", hier, err)
	}
	id := "crowsnest-test-" + strconv.Itoa(os.Getpid())
	dir := filepath.Join(hier, "k8s.io", id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(dir) })
	cmd := exec.Command("sh", "-c", "trap '' TERM; exec sleep 60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := ContainerProcesses([]string{id}); len(got) != 1 || got[0] != cmd.Process.Pid {
		t.Fatalf("processes in the container's cgroup: %v, want [%d]", got, cmd.Process.Pid)
	}

	if err := killContainers([]string{id}, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the container process ended with %v, want SIGKILL", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("the container's cgroup is still there: %v", err)
	}
	if left := ContainerCgroups([]string{id}); len(left) != 0 {
		t.Fatalf("cgroups left: %v", left)
	}
}

// An id that would glob or climb is not looked up.
func TestContainerCgroupsTakesIDsAsNames(t *testing.T) {
	for _, id := range []string{"", "*", ".", "..", "../x", "a/b", "[a]", "a b"} {
		if got := ContainerCgroups([]string{id}); len(got) != 0 {
			t.Errorf("%q: %v", id, got)
		}
	}
}
