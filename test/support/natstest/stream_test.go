package natstest_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	"github.com/crowsnest-dev/crowsnest/test/support/natstest"
)

// TestEnsureStream on a real server: it creates the stream, brings a stream
// of an older configuration up to date (the upgrade path), and leaves an
// up-to-date one as it is, its messages included.
func TestEnsureStream(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, url := natstest.StartT(t)
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	old := eventsv1.StreamConfig()
	old.MaxAge, old.Duplicates = time.Hour, time.Minute
	if _, err := js.CreateStream(ctx, old); err != nil {
		t.Fatal(err)
	}
	s, err := eventsv1.EnsureStream(ctx, js)
	if err != nil {
		t.Fatal(err)
	}
	want := eventsv1.StreamConfig()
	if got := s.CachedInfo().Config; got.MaxAge != want.MaxAge || got.Duplicates != want.Duplicates {
		t.Fatalf("an old stream was not updated: max age %s, duplicates %s", got.MaxAge, got.Duplicates)
	}
	if _, err := js.Publish(ctx, eventsv1.SubjectReportStored, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	again, err := eventsv1.EnsureStream(ctx, js)
	if err != nil {
		t.Fatal(err)
	}
	info, err := again.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 1 || info.Config.MaxAge != want.MaxAge {
		t.Fatalf("up-to-date stream after EnsureStream: %d messages, max age %s", info.State.Msgs, info.Config.MaxAge)
	}
}
