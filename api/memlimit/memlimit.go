// Package memlimit sets the Go runtime's soft memory limit from the
// container's memory limit, the contract between the chart and every
// Crowsnest binary: the chart passes limits.memory in bytes as
// CROWSNEST_MEMORY_LIMIT (a resourceFieldRef), and the binary keeps its heap
// under Fraction of it, so the garbage collector works harder before the
// kernel's OOM killer does. Without the variable, the cgroup v2 limit
// (/sys/fs/cgroup/memory.max) is used; an explicit GOMEMLIMIT always wins.
package memlimit

import (
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// EnvVar carries the container's memory limit in bytes.
const EnvVar = "CROWSNEST_MEMORY_LIMIT"

// Fraction of the container's limit the Go heap may use: the rest is
// goroutine stacks, runtime metadata and what the kernel counts besides.
const Fraction = 0.9

// CgroupFile is cgroup v2's memory limit of the process's cgroup.
const CgroupFile = "/sys/fs/cgroup/memory.max"

// Set applies the limit and returns it in bytes (0: none set) and where it
// came from, for the start-up log.
func Set(getenv func(string) string, cgroupFile string) (int64, string, error) {
	if getenv("GOMEMLIMIT") != "" {
		return debug.SetMemoryLimit(-1), "GOMEMLIMIT", nil
	}
	limit, source, err := containerLimit(getenv, cgroupFile)
	if err != nil || limit <= 0 {
		return 0, source, err
	}
	soft := int64(float64(limit) * Fraction)
	debug.SetMemoryLimit(soft)
	return soft, source, nil
}

func containerLimit(getenv func(string) string, cgroupFile string) (int64, string, error) {
	if v := strings.TrimSpace(getenv(EnvVar)); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return 0, EnvVar, fmt.Errorf("%s=%q: want the memory limit in bytes", EnvVar, v)
		}
		return n, EnvVar, nil
	}
	b, err := os.ReadFile(cgroupFile)
	if err != nil {
		return 0, "", nil // not in a cgroup v2 container: no limit to follow
	}
	v := strings.TrimSpace(string(b))
	if v == "max" {
		return 0, cgroupFile, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 || n == math.MaxInt64 {
		return 0, cgroupFile, nil
	}
	return n, cgroupFile, nil
}
