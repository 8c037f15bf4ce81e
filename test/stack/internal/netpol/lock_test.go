package netpol

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/crowsnest-dev/crowsnest/test/stack/internal/hostlock"
)

// TestStartRefusedWhileLockHeld: while another stack holds the machine's
// lock, Start touches nothing and says so with ErrBusy (what the stack
// tells apart from other failures). The lock file is moved to a temporary
// directory, so the machine's real lock is never taken.
func TestStartRefusedWhileLockHeld(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("Start refuses to run without root before it looks at the lock")
	}
	old := lockFile
	lockFile = filepath.Join(t.TempDir(), filepath.Base(old))
	t.Cleanup(func() { lockFile = old })
	other, err := hostlock.Take(t.Context(), lockFile, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Release()

	got, err := Start(t.Context(), Config{})
	if !errors.Is(err, ErrBusy) || !errors.Is(err, hostlock.ErrBusy) || got != nil {
		t.Fatalf("Start while the lock is held: %v, %v; want ErrBusy", got, err)
	}
}
