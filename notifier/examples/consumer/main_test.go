package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	"github.com/crowsnest-dev/crowsnest/test/support/natstest"
)

// TestExampleConsumer builds the example the docs show and runs it as the
// reader user against a server with the contract's permissions: a
// findings.changed published by results-api comes out as a line.
func TestExampleConsumer(t *testing.T) {
	pw := map[eventsv1.User]string{eventsv1.UserResultsAPI: "pw-api", eventsv1.UserReader: "pw-reader"}
	_, url := natstest.StartAuthT(t, pw)
	bin := filepath.Join(t.TempDir(), "consumer")
	// The binaries' flags (CGO_ENABLED=0 -trimpath): the build shares
	// the notifier binary's compiled packages instead of compiling the
	// standard library and the NATS client once more (211 compiles on a
	// cold cache, 1 after the notifier's build).
	build := exec.Command("go", "build", "-trimpath", "-o", bin, ".")
	build.Env = append(os.Environ(), "GOWORK=off", "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	nc, err := nats.Connect(url, nats.UserInfo("results-api", "pw-api"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	if _, err := eventsv1.EnsureStream(ctx, js); err != nil {
		t.Fatal(err)
	}
	d := "sha256:" + strings.Repeat("c", 64)
	p := eventsv1.FindingsChanged{ChangeID: 1, Digest: d, Image: "demo@" + d, Cause: eventsv1.CauseRematch, ChangedAt: time.Now(),
		New: []eventsv1.ChangedFinding{{ID: "CVE-2026-9999", Severity: "critical", Package: eventsv1.ChangedPackage{Name: "zlib", Version: "1.2"}}}}
	ev, _ := eventsv1.New(eventsv1.SourceResultsAPI, eventsv1.TypeFindingsChanged, "id-1", "", time.Now(), p)
	b, _ := json.Marshal(ev)
	if _, err := js.Publish(ctx, eventsv1.SubjectFindingsChanged, b); err != nil {
		t.Fatal(err)
	}

	cmd := exec.CommandContext(ctx, bin, url, "reader", "pw-reader")
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	if want := "demo@" + d + " CVE-2026-9999 in zlib 1.2 (rematch)\n"; line != want {
		t.Fatalf("printed %q, want %q", line, want)
	}
}
