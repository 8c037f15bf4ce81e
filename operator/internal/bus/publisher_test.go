package bus

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	"github.com/crowsnest-dev/crowsnest/test/support/natstest"
)

func event(t *testing.T, job string) eventsv1.Event {
	t.Helper()
	ev, err := eventsv1.New(eventsv1.SourceOperator, eventsv1.TypeImageNeeded, eventsv1.ID(eventsv1.TypeImageNeeded, job), "sha256:x",
		time.Now(), eventsv1.ImageNeeded{Job: job})
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func streamMessages(t *testing.T, url string) uint64 {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, eventsv1.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

func waitConnected(t *testing.T, p *JetStream) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !p.nc.IsConnected() {
		if time.Now().After(deadline) {
			t.Fatal("publisher did not (re)connect within 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestPublishDeduplicatesAndSurvivesOutage(t *testing.T) {
	srv, url := natstest.StartT(t)
	p, err := Connect(url, 2*time.Second, nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	waitConnected(t, p)
	ctx := context.Background()
	// The stream is created on first use; the same id twice is stored once.
	for range 2 {
		if err := p.Publish(ctx, event(t, "uid-1")); err != nil {
			t.Fatal(err)
		}
	}
	if n := streamMessages(t, url); n != 1 {
		t.Fatalf("stream holds %d messages, want 1", n)
	}

	srv.Stop()
	start := time.Now()
	if err := p.Publish(ctx, event(t, "uid-2")); err == nil {
		t.Fatal("publish with NATS down succeeded")
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("publish with NATS down took %v; it must fail fast", d)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	waitConnected(t, p)
	for _, job := range []string{"uid-1", "uid-2"} {
		if err := p.Publish(ctx, event(t, job)); err != nil {
			t.Fatalf("after restart: %v", err)
		}
	}
	if n := streamMessages(t, url); n != 2 {
		t.Errorf("stream holds %d messages after the outage, want 2 (uid-1 deduplicated)", n)
	}
}

func TestPublishRejectsUnknownType(t *testing.T) {
	_, url := natstest.StartT(t)
	p, err := Connect(url, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.Publish(context.Background(), eventsv1.Event{Type: "nope"}); err == nil {
		t.Error("unknown type accepted")
	}
}

func TestConnectDoesNotWaitForServer(t *testing.T) {
	start := time.Now()
	p, err := Connect("nats://127.0.0.1:1", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if time.Since(start) > 2*time.Second {
		t.Error("Connect blocked on an unreachable server")
	}
	if err := p.Publish(context.Background(), event(t, "x")); err == nil {
		t.Error("publish without a server succeeded")
	}
}

// TestPublishDedupSaysWhenJetStreamDroppedTheEvent: the first publish of an
// id is stored, a second one within the duplicate window is acknowledged as
// a duplicate and not stored.
func TestPublishDedupSaysWhenJetStreamDroppedTheEvent(t *testing.T) {
	_, url := natstest.StartT(t)
	p, err := Connect(url, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	waitConnected(t, p)
	ctx := context.Background()
	for i, want := range []bool{false, true} {
		dup, err := p.PublishDedup(ctx, event(t, "job-dedup"))
		if err != nil || dup != want {
			t.Errorf("publish %d: duplicate %v, err %v; want %v", i+1, dup, err, want)
		}
	}
	if n := streamMessages(t, url); n != 1 {
		t.Errorf("%d messages stored, want 1", n)
	}
}
