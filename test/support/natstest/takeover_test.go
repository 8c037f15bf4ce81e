package natstest_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
)

// TestNoUserTouchesAnotherServicesConsumer plays every user against every
// service's durable consumer it does not own: pulling its messages,
// acknowledging them, deleting, pausing, resetting, unpinning, re-creating
// or reading it. Each request must be refused by the server as a
// permissions violation, and afterwards every consumer still holds all its
// messages, undelivered, with its owner's configuration.
func TestNoUserTouchesAnotherServicesConsumer(t *testing.T) {
	var names []string
	for _, c := range serviceConsumers() {
		names = append(names, c.name)
	}
	if !slices.Equal(names, eventsv1.ServiceConsumers) {
		t.Fatalf("the test plays against %q, the contract reserves %q", names, eventsv1.ServiceConsumers)
	}
	_, _, actors := authStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	for _, c := range serviceConsumers() {
		for _, u := range eventsv1.Users() {
			if u == c.owner {
				continue
			}
			a := actors[u]
			api := "$JS.API.CONSUMER.%s." + eventsv1.StreamName + "." + c.name
			a.refused(t, fmt.Sprintf(api, "MSG.NEXT"), []byte(`{"batch":1,"no_wait":true}`))
			a.publishRefused(t, "$JS.ACK."+eventsv1.StreamName+"."+c.name+".1.1.1.1700000000000000000.0")
			a.refused(t, fmt.Sprintf(api, "DELETE"), nil)
			a.refused(t, fmt.Sprintf(api, "PAUSE"), []byte(`{"pause_until":"2099-01-01T00:00:00Z"}`))
			a.refused(t, fmt.Sprintf(api, "RESET"), nil)
			a.refused(t, fmt.Sprintf(api, "UNPIN"), []byte(`{"group":"g"}`))
			a.refused(t, fmt.Sprintf(api, "INFO"), nil)
			a.refused(t, fmt.Sprintf(api, "CREATE")+".crowsnest.none",
				[]byte(`{"stream_name":"CROWSNEST","config":{"durable_name":"`+c.name+`","filter_subject":"crowsnest.none","ack_policy":"explicit"}}`))
		}
	}

	// Every consumer is untouched: its owner sees all its messages pending,
	// none delivered, none paused, its filters as created.
	for _, c := range serviceConsumers() {
		cons, err := actors[c.owner].js.Consumer(ctx, eventsv1.StreamName, c.name)
		if err != nil {
			t.Fatalf("%s lost its consumer %s: %v", c.owner, c.name, err)
		}
		info, err := cons.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.Delivered.Consumer != 0 || info.NumAckPending != 0 || info.NumPending != uint64(len(c.filters)) || info.Paused {
			t.Errorf("consumer %s was touched: delivered %d, ack pending %d, pending %d (want %d), paused %v",
				c.name, info.Delivered.Consumer, info.NumAckPending, info.NumPending, len(c.filters), info.Paused)
		}
		filters := append([]string{info.Config.FilterSubject}, info.Config.FilterSubjects...)
		for _, f := range c.filters {
			if !slices.Contains(filters, f) {
				t.Errorf("consumer %s lost its filter %s (now %q)", c.name, f, filters)
			}
		}
	}
}

// TestOnlyTheOwnerChangesTheStream: every user but the stream's owner is
// refused a stream update (which could cut MaxAge or MaxMsgs and so purge
// through the limits), a purge, a message delete and a deletion. The owner
// may update it (EnsureStream on an upgrade) and nobody may purge or
// delete it.
func TestOnlyTheOwnerChangesTheStream(t *testing.T) {
	_, _, actors := authStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	shrink := eventsv1.StreamConfig()
	shrink.MaxMsgs = 1
	update := []byte(`{"name":"CROWSNEST","subjects":["crowsnest.>"],"storage":"file","retention":"limits","max_msgs":1,"max_age":604800000000000,"duplicate_window":1800000000000}`)
	for _, u := range eventsv1.Users() {
		a := actors[u]
		api := "$JS.API.STREAM.%s." + eventsv1.StreamName
		if u != eventsv1.StreamOwner {
			a.refused(t, fmt.Sprintf(api, "UPDATE"), update)
			uctx, ucancel := context.WithTimeout(ctx, 2*time.Second)
			if _, err := a.js.UpdateStream(uctx, shrink); err == nil {
				t.Errorf("%s updated the stream", u)
			}
			ucancel()
		}
		a.refused(t, fmt.Sprintf(api, "PURGE"), nil)
		a.refused(t, fmt.Sprintf(api, "MSG.DELETE"), []byte(`{"seq":1}`))
		a.refused(t, fmt.Sprintf(api, "DELETE"), nil)
	}
	owner := actors[eventsv1.StreamOwner].js
	s, err := owner.Stream(ctx, eventsv1.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	info := s.CachedInfo()
	if info.State.Msgs != 6 || info.Config.MaxMsgs != -1 {
		t.Errorf("stream holds %d messages with max_msgs %d, want the 6 published and no message limit", info.State.Msgs, info.Config.MaxMsgs)
	}
	// The owner brings the stream to the contract's configuration.
	changed := eventsv1.StreamConfig()
	changed.Description = "an older description"
	if _, err := owner.UpdateStream(ctx, changed); err != nil {
		t.Fatalf("the owner may update the stream: %v", err)
	}
	if _, err := eventsv1.EnsureStream(ctx, owner); err != nil {
		t.Fatalf("the owner's EnsureStream: %v", err)
	}
	// The others open it as it is and never fail on a difference.
	if _, err := owner.UpdateStream(ctx, changed); err != nil {
		t.Fatal(err)
	}
	for _, u := range eventsv1.Users() {
		if u == eventsv1.StreamOwner || u == eventsv1.UserReader || u == eventsv1.UserNotifier {
			continue
		}
		if _, err := eventsv1.OpenStream(ctx, actors[u].js); err != nil {
			t.Errorf("%s opens the stream: %v", u, err)
		}
	}
	if s, err = owner.Stream(ctx, eventsv1.StreamName); err != nil || s.CachedInfo().Config.Description != changed.Description {
		t.Errorf("a non-owner changed the stream's configuration (%v)", err)
	}
}

// TestReaderStillReadsAsDocumented: what docs/events.md tells a tool to do
// with the reader user still works — a core subscription on crowsnest.>,
// a durable consumer of its own (create, pull, ack, info, delete), an
// ordered consumer (nats.go's OrderedConsumer: server-side names it makes
// and recreates) and a server-named ephemeral one.
func TestReaderStillReadsAsDocumented(t *testing.T) {
	_, _, actors := authStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	reader := actors[eventsv1.UserReader]

	sub, err := reader.nc.SubscribeSync("crowsnest.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := reader.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	mustPublish(ctx, t, actors[eventsv1.UserOperator].js, eventsv1.SubjectJobDone)
	if m, err := sub.NextMsg(2 * time.Second); err != nil || m.Subject != eventsv1.SubjectJobDone {
		t.Fatalf("core subscription: %v", err)
	}
	const held = 7 // authStack's six and the job.done above

	durable, err := reader.js.CreateOrUpdateConsumer(ctx, eventsv1.StreamName, jetstream.ConsumerConfig{
		Durable: "my-tool", FilterSubject: eventsv1.SubjectFindingsChanged, AckPolicy: jetstream.AckExplicitPolicy,
	})
	if err != nil {
		t.Fatalf("reader creates its own durable consumer: %v", err)
	}
	readAll(t, durable, 1, true)
	if _, err := durable.Info(ctx); err != nil {
		t.Errorf("reader reads its consumer's info: %v", err)
	}
	if err := reader.js.DeleteConsumer(ctx, eventsv1.StreamName, "my-tool"); err != nil {
		t.Errorf("reader deletes its own consumer: %v", err)
	}

	ordered, err := reader.js.OrderedConsumer(ctx, eventsv1.StreamName, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatalf("reader creates an ordered consumer: %v", err)
	}
	readAll(t, ordered, held, false)

	ephemeral, err := reader.js.CreateConsumer(ctx, eventsv1.StreamName, jetstream.ConsumerConfig{AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatalf("reader creates an ephemeral consumer: %v", err)
	}
	readAll(t, ephemeral, held, true)

	if got := reader.v.seen; len(got) != 0 {
		t.Errorf("the documented reads raised permissions violations: %q", got)
	}
}

func readAll(t *testing.T, c jetstream.Consumer, want int, ack bool) {
	t.Helper()
	batch, err := c.Fetch(want+1, jetstream.FetchMaxWait(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	for m := range batch.Messages() {
		got++
		if ack {
			if err := m.Ack(); err != nil {
				t.Errorf("ack: %v", err)
			}
		}
	}
	if err := batch.Error(); err != nil {
		t.Errorf("fetch: %v", err)
	}
	if got != want {
		t.Errorf("read %d events, want %d", got, want)
	}
}
