package bus

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	"github.com/crowsnest-dev/crowsnest/test/support/natstest"
)

// TestOnReportDeletedDeliversWhatWasMissed: a deletion published while the
// operator is stopped (its subscriber gone, its connection closed) is
// delivered once when it starts again, through the durable consumer; the
// one delivered before the stop is not delivered again.
func TestOnReportDeletedDeliversWhatWasMissed(t *testing.T) {
	_, url := natstest.StartT(t)
	got := make(chan string, 8)
	before, missed := testDigest(1), testDigest(2)

	first := connected(t, url)
	stop, err := first.OnReportDeleted(func(d string) { got <- d })
	if err != nil {
		t.Fatal(err)
	}
	publishDeleted(t, url, nil, before)
	expectOnly(t, got, before)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	first.Close()

	publishDeleted(t, url, nil, missed)

	second := connected(t, url)
	stop, err = second.OnReportDeleted(func(d string) { got <- d })
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = stop() }()
	expectOnly(t, got, missed)
	// Acknowledged: nothing is pending or waiting for an ack, nothing was
	// redelivered.
	eventually(t, "the consumer has no pending or unacknowledged message", func() error {
		info := consumerInfo(t, url, nil)
		if info.NumPending != 0 || info.NumAckPending != 0 || info.NumRedelivered != 0 || info.Delivered.Consumer != 2 {
			return fmt.Errorf("pending %d, ack pending %d, redelivered %d, delivered %d", info.NumPending, info.NumAckPending,
				info.NumRedelivered, info.Delivered.Consumer)
		}
		return nil
	})
}

// TestOnReportDeletedStartsWithoutNATS: with the server down, the operator
// starts at once; once the server is up, the consumer is created and
// deletions are delivered.
func TestOnReportDeletedStartsWithoutNATS(t *testing.T) {
	srv, url := natstest.StartT(t)
	srv.Stop()
	p, err := Connect(url, time.Second, nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	got := make(chan string, 4)
	start := time.Now()
	stop, err := p.OnReportDeleted(func(d string) { got <- d })
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = stop() }()
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("OnReportDeleted took %v with NATS down", d)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the consumer exists once NATS is up", func() error {
		_, err := consumerInfoErr(url, nil)
		return err
	})
	publishDeleted(t, url, nil, testDigest(3))
	expectOnly(t, got, testDigest(3))
}

// TestOnReportDeletedWithTheOperatorsPermissions runs the consumer as the
// operator's NATS user of the shared contract: it may create and read its
// own consumer, pull and acknowledge, and do nothing more on the stream
// (no deleting or purging it, no deleting its own consumer, no other
// consumer).
func TestOnReportDeletedWithTheOperatorsPermissions(t *testing.T) {
	pw := map[eventsv1.User]string{eventsv1.UserOperator: "pw-operator", eventsv1.UserResultsAPI: "pw-results-api"}
	_, url := natstest.StartAuthT(t, pw)
	as := func(u eventsv1.User) []nats.Option {
		return []nats.Option{nats.UserInfo(string(u), pw[u]), nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {})}
	}
	p, err := Connect(url, 2*time.Second, as(eventsv1.UserOperator)...)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	waitConnected(t, p)
	got := make(chan string, 4)
	stop, err := p.OnReportDeleted(func(d string) { got <- d })
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = stop() }()
	publishDeleted(t, url, as(eventsv1.UserResultsAPI), testDigest(4))
	expectOnly(t, got, testDigest(4))
	eventually(t, "the operator's ack reached the server", func() error {
		info := consumerInfo(t, url, as(eventsv1.UserOperator))
		if info.NumAckPending != 0 || info.NumRedelivered != 0 {
			return fmt.Errorf("ack pending %d, redelivered %d", info.NumAckPending, info.NumRedelivered)
		}
		return nil
	})
	if err := p.Publish(context.Background(), event(t, "uid-1")); err != nil {
		t.Errorf("the operator may publish its events: %v", err)
	}

	js, err := jetstream.New(p.nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stream, err := js.Stream(ctx, eventsv1.StreamName)
	if err != nil {
		t.Fatalf("the operator may read the stream's info: %v", err)
	}
	var wg sync.WaitGroup
	for what, try := range map[string]func(context.Context) error{
		"delete the stream": func(ctx context.Context) error { return js.DeleteStream(ctx, eventsv1.StreamName) },
		"purge the stream":  func(ctx context.Context) error { return stream.Purge(ctx) },
		"delete its own consumer": func(ctx context.Context) error {
			return js.DeleteConsumer(ctx, eventsv1.StreamName, eventsv1.ConsumerOperatorReportDeleted)
		},
		"take over results-api's consumer": func(ctx context.Context) error {
			_, err := js.CreateOrUpdateConsumer(ctx, eventsv1.StreamName, jetstream.ConsumerConfig{Durable: "results-api-scans", FilterSubject: eventsv1.SubjectJobDone})
			return err
		},
		"read another subject through its consumer's name": func(ctx context.Context) error {
			_, err := js.CreateOrUpdateConsumer(ctx, eventsv1.StreamName, jetstream.ConsumerConfig{Durable: eventsv1.ConsumerOperatorReportDeleted, FilterSubject: eventsv1.SubjectReportStored})
			return err
		},
		"make an ephemeral consumer": func(ctx context.Context) error {
			_, err := js.OrderedConsumer(ctx, eventsv1.StreamName, jetstream.OrderedConsumerConfig{})
			return err
		},
	} {
		// A refused request gets no answer: each waits out its timeout,
		// so they run side by side.
		wg.Go(func() {
			tctx, tcancel := context.WithTimeout(ctx, 2*time.Second)
			defer tcancel()
			if err := try(tctx); err == nil {
				t.Errorf("the operator's user could %s", what)
			}
		})
	}
	wg.Wait()
	if _, err := consumerInfoErr(url, as(eventsv1.UserOperator)); err != nil {
		t.Errorf("its consumer is gone: %v", err)
	}
}

func testDigest(i int) string { return fmt.Sprintf("sha256:%064x", i) }

func connected(t *testing.T, url string) *JetStream {
	t.Helper()
	p, err := Connect(url, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	waitConnected(t, p)
	return p
}

// publishDeleted publishes a valid report.deleted to JetStream as
// results-api does, and waits for the stream's acknowledgement.
func publishDeleted(t *testing.T, url string, opts []nats.Option, digest string) {
	t.Helper()
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ev, err := eventsv1.New(eventsv1.SourceResultsAPI, eventsv1.TypeReportDeleted, eventsv1.ID(eventsv1.TypeReportDeleted, digest), digest,
		time.Now(), eventsv1.ReportDeleted{Digest: digest})
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := js.Publish(ctx, eventsv1.SubjectReportDeleted, data, jetstream.WithMsgID(ev.ID)); err != nil {
		t.Fatalf("publish %s: %v", eventsv1.SubjectReportDeleted, err)
	}
}

func consumerInfoErr(url string, opts []nats.Option) (*jetstream.ConsumerInfo, error) {
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := js.Consumer(ctx, eventsv1.StreamName, eventsv1.ConsumerOperatorReportDeleted)
	if err != nil {
		return nil, err
	}
	return c.Info(ctx)
}

func consumerInfo(t *testing.T, url string, opts []nats.Option) *jetstream.ConsumerInfo {
	t.Helper()
	info, err := consumerInfoErr(url, opts)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// eventually polls fn for up to 10 s.
func eventually(t *testing.T, what string, fn func() error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := fn()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
