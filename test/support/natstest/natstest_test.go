package natstest_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/crowsnest-dev/crowsnest/test/support/natstest"
)

// TestJetStreamRoundTrip proves the embedded server runs JetStream: a message
// published to a stream is consumed back, a duplicate Nats-Msg-Id is dropped,
// and the stream survives a server restart.
func TestJetStreamRoundTrip(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, url := natstest.StartT(t)

	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: "SMOKE", Subjects: []string{"smoke.>"}, Storage: jetstream.FileStorage})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := js.Publish(ctx, "smoke.hello", []byte("hi"), jetstream.WithMsgID("id-1")); err != nil {
			t.Fatal(err)
		}
	}
	info, err := stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 1 {
		t.Fatalf("stream holds %d messages, want 1 (duplicate id not dropped)", info.State.Msgs)
	}

	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}

	cons, err := js.CreateOrUpdateConsumer(ctx, "SMOKE", jetstream.ConsumerConfig{Durable: "smoke"})
	if err != nil {
		t.Fatalf("consumer after restart: %v", err)
	}
	msg, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
	if err != nil {
		t.Fatalf("consume: %v", err)
	}
	if string(msg.Data()) != "hi" || msg.Subject() != "smoke.hello" {
		t.Fatalf("got %q on %s, want \"hi\" on smoke.hello", msg.Data(), msg.Subject())
	}
	if err := msg.Ack(); err != nil {
		t.Fatal(err)
	}
}
