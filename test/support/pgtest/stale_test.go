package pgtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/test/support/internal/procstat"
)

// A server folder whose test process was killed goes at the next start;
// one whose owner runs, and a fresh one without an owner (being made this
// moment), stay; an old one without an owner goes.
func TestSweepStaleRemovesWhatAKilledTestLeft(t *testing.T) {
	tmp := t.TempDir()
	mk := func(name string) string {
		d := filepath.Join(tmp, dirPrefix+name)
		if err := os.MkdirAll(filepath.Join(d, "data"), 0o700); err != nil {
			t.Fatal(err)
		}
		return d
	}
	// A process that has ended: its pid with the start time it had.
	dead := exec.Command("sleep", "0")
	if err := dead.Start(); err != nil {
		t.Fatal(err)
	}
	deadStart := procstat.Start(dead.Process.Pid)
	if err := dead.Wait(); err != nil {
		t.Fatal(err)
	}
	killed := mk("killed")
	if err := os.WriteFile(filepath.Join(killed, ownerFile), []byte(strconv.Itoa(dead.Process.Pid)+" "+deadStart+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// This process, but another start time: its pid was reused.
	reused := mk("reused")
	if err := os.WriteFile(filepath.Join(reused, ownerFile), []byte(strconv.Itoa(os.Getpid())+" 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	live := mk("live")
	if err := writeOwner(live); err != nil {
		t.Fatal(err)
	}
	fresh := mk("fresh")
	old := mk("old")
	if err := os.Chtimes(old, time.Now(), time.Now().Add(-staleUnowned-time.Minute)); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(tmp, "not-ours")
	if err := os.Mkdir(other, 0o700); err != nil {
		t.Fatal(err)
	}

	removed := sweepStale(tmp, time.Now())
	for _, d := range []string{killed, reused, old} {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s is still there (%v)", filepath.Base(d), err)
		}
	}
	for _, d := range []string{live, fresh, other} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s was removed: %v", filepath.Base(d), err)
		}
	}
	if len(removed) != 3 {
		t.Errorf("removed %v, want the 3 stale folders", removed)
	}
}

// A started server's folder names this process as its owner.
func TestServerFolderNamesItsOwner(t *testing.T) {
	s, err := StartServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Error(err)
		}
	})
	if alive, known := ownerAlive(s.dataDir); !alive || !known {
		t.Fatalf("owner of %s: alive %v, known %v", s.dataDir, alive, known)
	}
	if removed := sweepStale(filepath.Dir(s.dataDir), time.Now()); len(removed) > 0 {
		for _, d := range removed {
			if d == s.dataDir {
				t.Fatalf("the sweep removed a running server's folder")
			}
		}
	}
}
