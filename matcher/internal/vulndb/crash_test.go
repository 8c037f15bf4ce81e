package vulndb

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"
)

// Environment of the child process TestKilledMidImport starts.
const (
	envCrashStep    = "VULNDB_TEST_CRASH_STEP"
	envCrashDir     = "VULNDB_TEST_CRASH_DIR"
	envCrashArchive = "VULNDB_TEST_CRASH_ARCHIVE"
)

func TestMain(m *testing.M) {
	if step := os.Getenv(envCrashStep); step != "" {
		os.Exit(crashChild(step))
	}
	code := m.Run()
	if upstreams.dir != "" {
		_ = os.RemoveAll(upstreams.dir)
	}
	os.Exit(code)
}

// crashChild imports the archive and SIGKILLs itself at step: no deferred
// cleanup, no flushing, exactly what kill -9 leaves.
func crashChild(step string) int {
	s, err := Open(os.Getenv(envCrashDir), Options{crash: func(at string) {
		if at == step {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal is on its way
		}
	}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if _, err := s.Import(context.Background(), os.Getenv(envCrashArchive), ImportOptions{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	return 3 // step never reached
}

// TestKilledMidImport kills a real process (SIGKILL) at every step of an
// import and checks that the data directory then opens with a complete DB
// active — the old one up to the symlink swap, the new one from then on —
// with nothing left over, and that the next import works.
func TestKilledMidImport(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process per step")
	}
	first := upstream(t, "", t1)
	second := upstream(t, "", t2)
	third := upstream(t, "", t3)
	steps := []struct {
		step    string
		wantNew bool
	}{
		{"unpacked", false},
		{"hydrated", false},
		{"staged", false},
		{"placed", false},
		{"previous.new", false},
		{"previous", false},
		{"current.new", false},
		{"current", true},
		{"pruned", true},
	}
	for _, tc := range steps {
		t.Run(tc.step, func(t *testing.T) {
			dir := t.TempDir()
			s, err := Open(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Import(context.Background(), first.ArchivePath, ImportOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}

			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), envCrashStep+"="+tc.step, envCrashDir+"="+dir, envCrashArchive+"="+second.ArchivePath)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				t.Fatalf("child: %v, want killed\n%s", err, out)
			}
			if ws, ok := exit.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
				t.Fatalf("child ended %v, want SIGKILL at %s\n%s", err, tc.step, out)
			}

			s, err = Open(dir, Options{})
			if err != nil {
				t.Fatalf("reopen after kill at %s: %v", tc.step, err)
			}
			defer s.Close()
			act, ok := s.Active()
			if !ok {
				t.Fatalf("no active DB after kill at %s", tc.step)
			}
			wantBuilt, wantChecksum := t1, first.Archive.Checksum
			if tc.wantNew {
				wantBuilt, wantChecksum = t2, second.Archive.Checksum
			}
			if act.Checksum != wantChecksum {
				t.Fatalf("active %s after kill at %s, want built %s", act.ID, tc.step, wantBuilt)
			}
			checkUsable(t, act, wantBuilt)
			dbs, tmp := dbDirs(t, dir)
			keep := []string{act.ID}
			if p, ok := s.Previous(); ok {
				keep = append(keep, p.ID)
				checkUsable(t, p, t1)
			}
			slices.Sort(keep)
			if !slices.Equal(dbs, keep) || len(tmp) != 0 {
				t.Fatalf("db/ %v tmp/ %v after recovery, want db/ %v and tmp/ empty", dbs, tmp, keep)
			}
			next, err := s.Import(context.Background(), third.ArchivePath, ImportOptions{})
			if err != nil {
				t.Fatalf("import after recovery: %v", err)
			}
			checkUsable(t, next, t3)
		})
	}
}
