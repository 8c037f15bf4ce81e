package pgtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/crowsnest-dev/crowsnest/test/support/internal/procstat"
)

// A server's folder names the test process that owns it (ownerFile: its pid
// and start time, so a reused pid is not taken for it). A test binary
// killed by a signal (a CI run stopped with SIGTERM, go test -timeout) runs
// no Stop: its server dies with it (Pdeathsig), its folder stays. The next
// StartServer on the machine removes such folders.
const (
	dirPrefix = "crowsnest-pg-"
	ownerFile = "owner"
	// staleUnowned is how old a folder without an owner file (one being
	// made this moment, or one from before owner files) must be to go.
	staleUnowned = 10 * time.Minute
)

// writeOwner records this process as dir's owner.
func writeOwner(dir string) error {
	pid := os.Getpid()
	return os.WriteFile(filepath.Join(dir, ownerFile), fmt.Appendf(nil, "%d %s\n", pid, procstat.Start(pid)), 0o644)
}

// ownerAlive tells whether dir's owner still runs; known is false when
// dir has no readable owner file.
func ownerAlive(dir string) (alive, known bool) {
	b, err := os.ReadFile(filepath.Join(dir, ownerFile))
	if err != nil {
		return false, false
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return false, false
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil {
		return false, false
	}
	return procstat.Start(pid) == f[1], true
}

// sweepStale removes the server folders under tmp whose owner is gone,
// and those without an owner older than staleUnowned. It returns what it
// removed.
func sweepStale(tmp string, now time.Time) []string {
	dirs, _ := filepath.Glob(filepath.Join(tmp, dirPrefix+"*"))
	var removed []string
	for _, dir := range dirs {
		alive, known := ownerAlive(dir)
		if alive {
			continue
		}
		if !known {
			info, err := os.Stat(dir)
			if err != nil || !info.IsDir() || now.Sub(info.ModTime()) < staleUnowned {
				continue
			}
		}
		if os.RemoveAll(dir) == nil {
			removed = append(removed, dir)
		}
	}
	return removed
}
