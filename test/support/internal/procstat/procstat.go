// Package procstat reads /proc/PID/stat, which the test helpers use to
// tell whether a process still runs, whose child it is, and when it
// started.
package procstat

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Fields returns the fields of /proc/PID/stat after the command name, so
// that Fields(pid)[0] is field 3 of proc(5) (the state) and [k] is field
// k+3; ok is false when there is no such process or the file is not as
// proc(5) says. The command name (field 2) is in parentheses and may hold
// spaces and parentheses, so the fields start after the last ')'.
func Fields(pid int) (fields []string, ok bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return nil, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil, false
	}
	return strings.Fields(s[i+1:]), true
}

// Running tells whether pid is a process that is not a zombie.
func Running(pid int) bool {
	f, ok := Fields(pid)
	return ok && len(f) > 0 && f[0] != "Z"
}

// Start is pid's start time (field 22, in clock ticks after boot), or ""
// when there is no such process: with the pid, it names one process, as a
// pid alone does not once the pid is reused.
func Start(pid int) string {
	f, ok := Fields(pid)
	if !ok || len(f) < 20 {
		return ""
	}
	return f[19]
}
