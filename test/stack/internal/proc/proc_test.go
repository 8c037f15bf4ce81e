package proc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A process that dies while starting: the error carries the end of its log,
// since a failed stack start removes the directory the log is in.
func TestWaitReadyErrorCarriesTheLogTail(t *testing.T) {
	script := "for i in $(seq 1 30); do echo line $i; done; echo 'open kv bucket: insufficient storage resources' >&2; exit 1"
	p, err := Start(Spec{Name: "dies", Binary: "/bin/sh", Args: []string{"-c", script}, LogDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	never := func(context.Context) error { return errors.New("not ready") }
	err = p.WaitReady(context.Background(), 30*time.Second, never)
	if err == nil {
		t.Fatal("WaitReady succeeded for a process that exited")
	}
	msg := err.Error()
	for _, want := range []string{"dies exited before it was ready", "line 30", "insufficient storage resources", "exit status 1"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "line 20\n") {
		t.Errorf("error holds more than the last 10 lines:\n%s", msg)
	}
}

func TestLogTail(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for i := range 2000 { // ~17 KiB: more than the 8 KiB read
		fmt.Fprintf(&b, "entry %04d\n", i)
	}
	path := filepath.Join(dir, "big.log")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, want := LogTail(path, 3), "  entry 1997\n  entry 1998\n  entry 1999"; got != want {
		t.Errorf("LogTail(big, 3) = %q, want %q", got, want)
	}
	small := filepath.Join(dir, "small.log")
	if err := os.WriteFile(small, []byte("only\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := LogTail(small, 10); got != "  only" {
		t.Errorf("LogTail(small) = %q", got)
	}
	if got := LogTail(filepath.Join(dir, "missing.log"), 10); !strings.Contains(got, "no such file") {
		t.Errorf("LogTail(missing) = %q, want the open error", got)
	}
}
