package events_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	"github.com/crowsnest-dev/crowsnest/test/support/natstest"
	"github.com/crowsnest-dev/crowsnest/test/support/pgtest"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/bomtest"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/service"
)

// childEnv makes the test binary run runChild instead of the tests.
const childEnv = "CROWSNEST_EVENTS_TEST_CHILD"

// runChild is a results-api process for a test to kill: the service as
// the binary wires it (service.New) on a loopback port, which it prints,
// until it is killed.
func runChild() int {
	svc, err := service.New(context.Background(), service.Config{DatabaseURL: os.Getenv(childEnv + "_DATABASE_URL"),
		NATSURL: os.Getenv(childEnv + "_NATS_URL"), WriteToken: os.Getenv(childEnv + "_TOKEN"),
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	fmt.Println(ln.Addr().String())
	err = (&http.Server{Handler: svc.Handler, ReadHeaderTimeout: 10 * time.Second}).Serve(ln)
	fmt.Fprintln(os.Stderr, "child:", err)
	return 1
}

// child is a results-api process started from this test binary.
type child struct {
	URL  string
	cmd  *exec.Cmd
	done chan struct{}
}

func startChild(t *testing.T, dsn, natsURL, token string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1", childEnv+"_DATABASE_URL="+dsn, childEnv+"_NATS_URL="+natsURL, childEnv+"_TOKEN="+token)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(c.done) }()
	t.Cleanup(c.kill)
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			addr <- sc.Text()
		}
	}()
	select {
	case a := <-addr:
		c.URL = "http://" + a
	case <-c.done:
		t.Fatal("results-api child exited at start")
	case <-time.After(30 * time.Second):
		t.Fatal("results-api child did not start within 30s")
	}
	return c
}

// kill ends the process with SIGKILL, a crash: nothing runs after it.
func (c *child) kill() {
	_ = c.cmd.Process.Kill()
	<-c.done
}

func putTo(t *testing.T, base, token, digest string, body []byte) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPut, base+"/api/v1/reports/"+digest, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestRelayKilledMidBatch kills results-api processes and counts: one
// stores 150 reports while NATS is down and is killed with their events in
// the outbox; the next starts publishing them and is killed (SIGKILL) as
// soon as the first reaches NATS, so the events it published are not yet
// deleted; the third publishes the rest and those again. The stream holds
// each event exactly once (Nats-Msg-Id), none is lost, and the republished
// ones show on a plain subscription.
func TestRelayKilledMidBatch(t *testing.T) {
	ns, url := natstest.StartT(t)
	ctx := testCtx(t, 90*time.Second)
	nc, js := natsConn(t, url)
	if _, err := eventsv1.EnsureStream(ctx, js); err != nil {
		t.Fatal(err)
	}
	dsn := pgtest.NewDatabase(t)
	const token, reports = "crash-test-admin-token-0123456789", 150

	ns.Stop()
	first := startChild(t, dsn, url, token)
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Go(func() {
			for n := w; n < reports; n += 6 {
				if code := putTo(t, first.URL, token, bomtest.Digest(1000+n), bomV(1)); code != http.StatusCreated {
					t.Errorf("put %d: %d", n, code)
				}
			}
		})
	}
	wg.Wait()
	first.kill()
	if n := len(reportRows(outboxRows(t, dsn))); n != reports {
		t.Fatalf("outbox holds %d events, want %d", n, reports)
	}

	if err := ns.Restart(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, nc.IsConnected)
	sub, err := nc.SubscribeSync(eventsv1.SubjectReportStored)
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	second := startChild(t, dsn, url, token)
	if _, err := sub.NextMsg(30 * time.Second); err != nil {
		t.Fatalf("no event published: %v", err)
	}
	second.kill()
	left := len(reportRows(outboxRows(t, dsn)))

	startChild(t, dsn, url, token)
	waitFor(t, func() bool { return len(outboxRows(t, dsn)) == 0 })
	seen := 1
	for {
		if _, err := sub.NextMsg(500 * time.Millisecond); err != nil {
			break
		}
		seen++
	}
	got := streamEvents(ctx, t, js, "crowsnest.report.")
	ids := map[string]bool{}
	digests := map[string]bool{}
	for _, e := range got {
		ids[e.MsgID] = true
		digests[e.Digest] = true
	}
	if len(got) != reports || len(ids) != reports || len(digests) != reports {
		t.Fatalf("stream holds %d report events (%d ids, %d digests), want %d of each", len(got), len(ids), len(digests), reports)
	}
	republished := seen - reports
	t.Logf("killed with %d of %d events left in the outbox; %d published twice, stored once", left, reports, republished)
	if left != reports || republished < 1 {
		t.Errorf("the kill did not land between a publish and its commit (%d left, %d republished): nothing was proved", left, republished)
	}
}
