package natstest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	"github.com/crowsnest-dev/crowsnest/test/support/natstest"
)

// TestPermissionsAgainstAttacker runs a real server with the contract's
// users and plays an attacker with each identity: no anonymous access, no
// publishing outside a user's own subjects, no deleting or purging the
// stream, no taking over a service's consumer. It counts the stream's
// messages to prove that every refused publish stored nothing.
func TestPermissionsAgainstAttacker(t *testing.T) {
	pw := map[eventsv1.User]string{}
	for _, u := range eventsv1.Users() {
		pw[u] = "pw-" + string(u)
	}
	_, url := natstest.StartAuthT(t, pw)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	if nc, err := nats.Connect(url, nats.MaxReconnects(0)); err == nil {
		nc.Close()
		t.Fatal("an anonymous client connected")
	}
	if nc, err := nats.Connect(url, nats.UserInfo("reader", "wrong"), nats.MaxReconnects(0)); err == nil {
		nc.Close()
		t.Fatal("a wrong password connected")
	}

	op := connect(t, url, eventsv1.UserOperator, pw)
	opJS, _ := jetstream.New(op)
	stream, err := eventsv1.EnsureStream(ctx, opJS)
	if err != nil {
		t.Fatalf("operator may create the stream: %v", err)
	}
	api := connect(t, url, eventsv1.UserResultsAPI, pw)
	apiJS, _ := jetstream.New(api)
	if _, err := eventsv1.EnsureStream(ctx, apiJS); err != nil {
		t.Fatalf("results-api may update the stream: %v", err)
	}
	reader := connect(t, url, eventsv1.UserReader, pw)
	readerJS, _ := jetstream.New(reader)

	// The legitimate publishes: stored.
	mustPublish(ctx, t, opJS, eventsv1.SubjectJobDone)
	mustPublish(ctx, t, opJS, eventsv1.SubjectImageNeeded)
	mustPublish(ctx, t, apiJS, eventsv1.SubjectReportStored)
	mustPublish(ctx, t, apiJS, eventsv1.SubjectReportDeleted)
	const stored = 4

	// Forgeries: each identity publishes what belongs to another.
	for _, f := range []struct {
		who     string
		js      jetstream.JetStream
		subject string
	}{
		{"reader", readerJS, eventsv1.SubjectJobDone},
		{"reader", readerJS, eventsv1.SubjectReportDeleted},
		{"operator", opJS, eventsv1.SubjectReportDeleted},
		{"operator", opJS, eventsv1.SubjectReportStored},
		{"results-api", apiJS, eventsv1.SubjectJobDone},
		{"results-api", apiJS, eventsv1.SubjectImageNeeded},
	} {
		pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := f.js.Publish(pctx, f.subject, []byte(`{"forged":true}`))
		pcancel()
		if err == nil {
			t.Errorf("%s published %s", f.who, f.subject)
		}
	}

	// No one may delete or purge the stream.
	for name, js := range map[string]jetstream.JetStream{"reader": readerJS, "operator": opJS, "results-api": apiJS} {
		dctx, dcancel := context.WithTimeout(ctx, 2*time.Second)
		if err := js.DeleteStream(dctx, eventsv1.StreamName); err == nil {
			t.Errorf("%s deleted the stream", name)
		}
		dcancel()
		if s, err := js.Stream(ctx, eventsv1.StreamName); err == nil {
			pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
			if err := s.Purge(pctx); err == nil {
				t.Errorf("%s purged the stream", name)
			}
			pcancel()
		}
	}

	// results-api's durable consumer: the reader can neither replace nor delete it.
	apiStream, err := apiJS.Stream(ctx, eventsv1.StreamName)
	if err != nil {
		t.Fatalf("results-api may look at the stream: %v", err)
	}
	if _, err := apiStream.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "results-api-scans", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatalf("results-api could not create its consumer: %v", err)
	}
	rs, err := readerJS.Stream(ctx, eventsv1.StreamName)
	if err != nil {
		t.Fatalf("reader may look at the stream: %v", err)
	}
	cctx, ccancel := context.WithTimeout(ctx, 2*time.Second)
	if _, err := rs.CreateOrUpdateConsumer(cctx, jetstream.ConsumerConfig{Durable: "results-api-scans", FilterSubject: "crowsnest.none", AckPolicy: jetstream.AckExplicitPolicy}); err == nil {
		t.Error("reader reconfigured results-api's consumer")
	}
	ccancel()
	dctx, dcancel := context.WithTimeout(ctx, 2*time.Second)
	if err := rs.DeleteConsumer(dctx, "results-api-scans"); err == nil {
		t.Error("reader deleted results-api's consumer")
	}
	dcancel()

	// What the reader is for: its own durable consumer reads every event.
	c, err := rs.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "my-tool", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatalf("reader may create its own consumer: %v", err)
	}
	batch, err := c.Fetch(stored+1, jetstream.FetchMaxWait(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	for m := range batch.Messages() {
		got++
		if err := m.Ack(); err != nil {
			t.Errorf("reader ack: %v", err)
		}
	}
	if got != stored {
		t.Errorf("reader read %d events, want %d", got, stored)
	}

	info, err := stream.Info(ctx)
	if err != nil {
		t.Fatalf("stream gone: %v", err)
	}
	if info.State.Msgs != stored {
		t.Errorf("stream holds %d messages, want exactly the %d legitimate ones", info.State.Msgs, stored)
	}
}

func connect(t *testing.T, url string, u eventsv1.User, pw map[eventsv1.User]string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url, nats.UserInfo(string(u), pw[u]), nats.MaxReconnects(0),
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {})) // permission violations are expected
	if err != nil {
		t.Fatalf("%s connect: %v", u, err)
	}
	t.Cleanup(nc.Close)
	return nc
}

func mustPublish(ctx context.Context, t *testing.T, js jetstream.JetStream, subject string) {
	t.Helper()
	if _, err := js.Publish(ctx, subject, []byte(`{}`)); err != nil {
		var apiErr *jetstream.APIError
		errors.As(err, &apiErr)
		t.Fatalf("publish %s: %v (%v)", subject, err, apiErr)
	}
}
