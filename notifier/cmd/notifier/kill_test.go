package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
)

// childEnv carries the child notifier's flags (JSON) to the re-run test
// binary.
const childEnv = "CROWSNEST_NOTIFIER_CHILD_ARGS"

// TestNotifierChild is the child process of the kill test: a real
// notifier with the flags it was given, until it is killed.
func TestNotifierChild(t *testing.T) {
	raw := os.Getenv(childEnv)
	if raw == "" {
		t.Skip("runs only as the kill test's child")
	}
	var args []string
	if err := json.Unmarshal([]byte(raw), &args); err != nil {
		t.Fatal(err)
	}
	o, err := parse(args, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o, deps{stdout: io.Discard, stderr: os.Stderr}); err != nil {
		t.Fatal(err)
	}
}

// TestKilledBetweenReceiveAndSendSentOnceAfterRestart runs the notifier as
// a child process and SIGKILLs it (no deferred cleanup runs) while its
// receiver holds the request open: the event was received and
// acknowledged, the message not yet accepted. After a restart the message
// is delivered exactly once, with the same CloudEvents id.
func TestKilledBetweenReceiveAndSendSentOnceAfterRestart(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	firstID := make(chan string, 1)
	rc.handle = func(w http.ResponseWriter, r *http.Request, attempt int) bool {
		if attempt == 1 {
			firstID <- r.Header.Get("Ce-Id")
			<-r.Context().Done() // held until the killed child's connection drops
			return false
		}
		return true
	}
	cfg := `
receivers:
- name: hook
  webhook: {url: "` + rc.URL + `", mode: binary}
routes:
- {name: all, receiver: hook, groupWait: 10ms}
`
	o := e.options(cfg)
	args := []string{"--config", o.Config, "--nats-url", e.url, "--nats-user", "notifier", "--nats-password-file", e.pwFile,
		"--listen", "127.0.0.1:0"}
	raw, _ := json.Marshal(args)
	cmd := exec.Command(os.Args[0], "-test.run=^TestNotifierChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+string(raw))
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	e.inventory("a", digest('a'), nil)
	e.findings(digest('a'), 1, "CVE-2026-0100")
	var id string
	select {
	case id = <-firstID:
	case <-e.ctx.Done():
		t.Fatal("the child never tried to send")
	}
	// Received and acknowledged: nothing is left for JetStream to redeliver,
	// so only the notifier's own state can bring the message back.
	cons, err := e.js(eventsv1.UserNotifier).Consumer(e.ctx, eventsv1.StreamName, testConsumer)
	if err != nil {
		t.Fatal(err)
	}
	info, err := cons.Info(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.NumAckPending != 0 || info.NumPending != 0 {
		t.Fatalf("before the kill: %d unacknowledged, %d pending; want both 0", info.NumAckPending, info.NumPending)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if rc.accepted() != 0 {
		t.Fatalf("accepted %d before the restart", rc.accepted())
	}

	n := e.start(o)
	eventually(t, "delivery after the restart", func() bool { return rc.accepted() == 1 })
	waitIdle(t, e, n, 0)
	if err := n.stop(); err != nil {
		t.Fatal(err)
	}
	if rc.accepted() != 1 {
		t.Fatalf("accepted %d messages, want exactly 1", rc.accepted())
	}
	if got := rc.headers[0].Get("Ce-Id"); got != id || id == "" {
		t.Fatalf("redelivered id %q, first attempt %q: want the same", got, id)
	}
	if sent := n.count("crowsnest_notifier_sent_total"); sent != 1 {
		t.Fatalf("sent metric %v, want 1", sent)
	}
}

// TestStoppedWhileStartingIsACleanStop stops the notifier while it waits
// for its consumer: here because the events stream does not exist yet (a
// restart after a kill also waited in CreateOrUpdateConsumer). The stop is
// a clean one, as a stop while consuming is, not "context canceled" (a
// SIGTERM then exited with an error; a CI run of
// TestKilledBetweenReceiveAndSendSentOnceAfterRestart failed on it).
// (An earlier version waited on a consumer name the notifier's NATS user
// may not create; the server answered that one on some runs.)
func TestStoppedWhileStartingIsACleanStop(t *testing.T) {
	e := newEnvWithoutStream(t)
	rc := newReceiver(t)
	n := e.start(e.options(`
receivers:
- name: hook
  webhook: {url: "` + rc.URL + `", mode: binary}
routes:
- {name: all, receiver: hook}
`))
	// its HTTP server runs from just before it asks for its consumer; it
	// is not ready until it has one
	status := func(path string) int {
		resp, err := http.Get("http://" + n.addr + path)
		if err != nil {
			return 0
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	eventually(t, "the notifier serves /healthz", func() bool { return status("/healthz") == http.StatusOK })
	eventually(t, "the notifier waits for the stream", func() bool { return strings.Contains(n.stderr.String(), "waiting for the stream") })
	if got := status("/readyz"); got != http.StatusServiceUnavailable {
		t.Fatalf("/readyz %d while it has no consumer, want 503", got)
	}
	if err := n.stop(); err != nil {
		t.Fatalf("stopped while waiting for its consumer: %v, want a clean stop", err)
	}
}

// TestStoppedAtAnyPointOfItsStartIsACleanStop stops the notifier after 0
// to 50 ms, wherever its start has got to (connecting, opening its state
// bucket, its consumer): every stop is clean. Stopped while opening its
// state bucket it returned "open kv bucket ...: context canceled" (seen
// when a failing test's cleanup printed the run's end).
func TestStoppedAtAnyPointOfItsStartIsACleanStop(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	cfg := `
receivers:
- {name: hook, webhook: {url: "` + rc.URL + `"}}
routes:
- {name: all, receiver: hook}
`
	for _, after := range []time.Duration{0, time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond} {
		n := e.start(e.options(cfg))
		time.Sleep(after)
		if err := n.stop(); err != nil {
			t.Errorf("stopped %v after its start: %v, want a clean stop", after, err)
		}
	}
}
