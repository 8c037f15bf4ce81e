package proc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
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

// TestFreePortIsOutsideTheEphemeralRange: a service's port must survive
// the service's restart, so it must not be one the kernel hands out to
// outgoing connections and port-0 listeners meanwhile (a CI run's NATS
// could not come back after an outage: its monitor port had been taken).
// Every port FreePort gives is bindable and below the ephemeral range;
// 300 port-0 listeners opened while one such port is free never get it.
func TestFreePortIsOutsideTheEphemeralRange(t *testing.T) {
	low := ephemeralLow()
	if lo, hi := stableRange(low); hi <= lo {
		t.Skipf("this machine's ephemeral range starts at %d: no stable ports below it, FreePort falls back to port 0", low)
	}
	seen := map[int]bool{}
	for range 50 {
		p, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if p < stableLow || p >= low || p >= stableHigh {
			t.Fatalf("FreePort gave %d, want one in [%d, %d) (ephemeral ports start at %d)", p, stableLow, min(stableHigh, low), low)
		}
		seen[p] = true
	}
	if len(seen) < 40 {
		t.Errorf("50 calls gave %d distinct ports: not spread over the range", len(seen))
	}
	p, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	for range 300 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		if got := ln.Addr().(*net.TCPAddr).Port; got == p {
			t.Fatalf("a port-0 listener got %d, the port FreePort gave", p)
		}
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
	if err != nil {
		t.Fatalf("the port FreePort gave is not free: %v", err)
	}
	_ = ln.Close()
}

func TestStableRange(t *testing.T) {
	for _, tt := range []struct{ ephemeral, lo, hi int }{
		{32768, 20000, 30000}, // Linux's default
		{25000, 20000, 25000}, // cut below the ephemeral ports
		{15000, 20000, 15000}, // none: FreePort falls back to port 0
	} {
		if lo, hi := stableRange(tt.ephemeral); lo != tt.lo || hi != tt.hi {
			t.Errorf("stableRange(%d) = [%d, %d), want [%d, %d)", tt.ephemeral, lo, hi, tt.lo, tt.hi)
		}
	}
}
