package node

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cgroupRoot is where the cgroup hierarchies are mounted; runc puts each
// container of the node's containerd (namespace k8s.io, the cgroupfs
// driver) in k8s.io/<container id> of every hierarchy.
var cgroupRoot = "/sys/fs/cgroup"

// TaskDir is the folder of containerd's shim bundles for the node's
// containers: one per container, from its creation until its shim deletes
// it, so after a stop it names the containers a killed shim left behind.
func TaskDir(nodeDir string) string {
	return filepath.Join(nodeDir, "containerd", "state", "io.containerd.runtime.v2.task", "k8s.io")
}

// ContainerIDs lists the containers in TaskDir(nodeDir).
func ContainerIDs(nodeDir string) []string {
	entries, _ := os.ReadDir(TaskDir(nodeDir))
	ids := make([]string, 0, len(entries))
	for _, e := range entries {
		ids = append(ids, e.Name())
	}
	return ids
}

// ContainerCgroups lists the cgroup folders of the containers ids, in
// every hierarchy.
func ContainerCgroups(ids []string) []string {
	var dirs []string
	for _, id := range ids {
		if !validID(id) {
			continue
		}
		found, _ := filepath.Glob(filepath.Join(cgroupRoot, "*", "k8s.io", id))
		dirs = append(dirs, found...)
	}
	return dirs
}

// validID tells whether id can name a container's cgroup folder: a plain
// name (containerd's ids are 64 hex digits), never one that climbs out of
// k8s.io or globs.
func validID(id string) bool {
	if id == "" || id == "." || id == ".." {
		return false
	}
	for _, r := range id {
		if !idRune(r) {
			return false
		}
	}
	return true
}

// idRune tells whether r may appear in a container id: a letter, a digit,
// '-', '_' or '.'.
func idRune(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		return true
	}
	return r == '-' || r == '_' || r == '.'
}

// ContainerProcesses lists the processes in the containers' cgroups.
func ContainerProcesses(ids []string) []int {
	seen := map[int]bool{}
	var pids []int
	for _, dir := range ContainerCgroups(ids) {
		b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil && !seen[pid] {
				seen[pid] = true
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// killContainers ends every process left in the containers' cgroups and
// removes the cgroups. Killing a shim does not end its containers: runc
// reparents them to init, where they keep the Pod's network namespace (and
// so its veth) alive — a container still being created when the shim went
// keeps its "runc init" waiting for a start that never comes. Bounded: it
// gives up after timeout and says what is left.
func killContainers(ids []string, timeout time.Duration) error {
	if len(ids) == 0 {
		return nil
	}
	deadline := time.Now().Add(timeout)
	for {
		pids := ContainerProcesses(ids)
		if len(pids) == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("container processes still running %s after SIGKILL: %v", timeout, pids)
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(50 * time.Millisecond)
	}
	var errs []error
	for _, dir := range ContainerCgroups(ids) {
		// A cgroup whose last process just exited can refuse removal for
		// a moment (EBUSY).
		for err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist); err = os.Remove(dir) {
			if time.Now().After(deadline) {
				errs = append(errs, fmt.Errorf("remove cgroup %s: %w", dir, err))
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return errors.Join(errs...)
}
