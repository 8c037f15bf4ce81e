package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
)

// seen is one event as a subscriber saw it.
type seen struct {
	Kind    string // NATS subject suffix (image.needed, job.done, report.stored, report.deleted) or WebSocket type
	ID      string
	Digest  string
	Outcome string // job.done
	Reason  string // job.done failure reason
	Message string // job.done failure detail
	Status  string // WebSocket scan.status
	At      time.Time
}

// recorder collects events from one subscriber.
type recorder struct {
	mu     sync.Mutex
	events []seen
}

func (r *recorder) add(e seen) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// of returns the events about digest, in arrival order.
func (r *recorder) of(digest string) []seen {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []seen
	for _, e := range r.events {
		if e.Digest == digest {
			out = append(out, e)
		}
	}
	return out
}

func kinds(es []seen) string {
	var k []string
	for _, e := range es {
		s := e.Kind
		if e.Status != "" {
			s += "(" + e.Status + ")"
		}
		switch {
		case e.Outcome != "" && e.Reason != "":
			// A failure says why, so a retry after a scan that really
			// failed reads differently from a duplicate.
			s += fmt.Sprintf("(%s %s: %s)", e.Outcome, e.Reason, e.Message)
		case e.Outcome != "":
			s += "(" + e.Outcome + ")"
		}
		k = append(k, s)
	}
	return strings.Join(k, " → ")
}

// consumeStream reads the CROWSNEST stream with an ordered consumer (cfg:
// its subjects and where to start) as the read-only reader user, as any
// other tool would, and calls handle for each message until the test ends.
func consumeStream(t *testing.T, url string, cfg jetstream.OrderedConsumerConfig, handle func(jetstream.Msg)) {
	t.Helper()
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(200*time.Millisecond),
		nats.UserInfo(string(eventsv1.UserReader), shared.NATS.Password(eventsv1.UserReader)),
		// The reader may not delete consumers, its own ephemeral one included
		// (the server removes that when idle): that refusal is expected.
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			if !errors.Is(err, nats.ErrPermissionViolation) {
				fmt.Fprintln(os.Stderr, "nats:", err)
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := js.Stream(ctx, eventsv1.StreamName) // the services create it; a reader may not
	if err != nil {
		t.Fatal(err)
	}
	cons, err := stream.OrderedConsumer(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	cc, err := cons.Consume(handle)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cc.Stop)
}

// payload validates a message of the stream as its subject's event and
// decodes its data into T; a message that fails either fails the test and
// returns false. It also returns the event's id.
func payload[T any](t *testing.T, m jetstream.Msg) (T, string, bool) {
	var p T
	ev, err := eventsv1.Parse(m.Subject(), m.Data(), time.Now(), time.Minute)
	if err != nil {
		t.Errorf("invalid event on %s: %v", m.Subject(), err)
		return p, "", false
	}
	if err := ev.Decode(&p); err != nil {
		t.Errorf("%s payload: %v", m.Subject(), err)
		return p, "", false
	}
	return p, ev.ID, true
}

// subscribeNATS records every event of the CROWSNEST stream from its start.
func subscribeNATS(t *testing.T, url string) *recorder {
	t.Helper()
	r := &recorder{}
	consumeStream(t, url, jetstream.OrderedConsumerConfig{FilterSubjects: []string{eventsv1.StreamSubjects}}, func(m jetstream.Msg) {
		var ev eventsv1.Event
		if err := json.Unmarshal(m.Data(), &ev); err != nil {
			t.Errorf("undecodable event on %s: %v", m.Subject(), err)
			return
		}
		var p struct{ Digest, Outcome, Reason, Message string }
		_ = ev.Decode(&p)
		r.add(seen{Kind: strings.TrimPrefix(m.Subject(), "crowsnest."), ID: ev.ID, Digest: p.Digest,
			Outcome: p.Outcome, Reason: p.Reason, Message: p.Message, At: time.Now()})
	})
	return r
}

// subscribeWS reads results-api's live event WebSocket.
func subscribeWS(t *testing.T, apiURL string) *recorder {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	dctx, dcancel := context.WithTimeout(ctx, 10*time.Second)
	defer dcancel()
	conn, resp, err := websocket.Dial(dctx, "ws"+strings.TrimPrefix(apiURL, "http")+"/api/v1/events", nil)
	if resp != nil && resp.Body != nil {
		_ = resp.Body.Close()
	}
	if err != nil {
		t.Fatalf("dial websocket: %v", err)
	}
	conn.SetReadLimit(1 << 20)
	r := &recorder{}
	go func() {
		defer func() { _ = conn.CloseNow() }()
		for {
			_, b, err := conn.Read(ctx)
			if err != nil {
				return
			}
			var f struct {
				Type, ID string
				Data     struct{ Digest, Status, Reason string }
			}
			if err := json.Unmarshal(b, &f); err != nil {
				continue
			}
			r.add(seen{Kind: f.Type, ID: f.ID, Digest: f.Data.Digest, Status: f.Data.Status, Reason: f.Data.Reason, At: time.Now()})
		}
	}()
	return r
}

// index returns the position of the first event of kind, or -1.
func index(es []seen, kind string) int {
	for i, e := range es {
		if e.Kind == kind {
			return i
		}
	}
	return -1
}

func count(es []seen, kind string) int {
	n := 0
	for _, e := range es {
		if e.Kind == kind {
			n++
		}
	}
	return n
}

// checkNATSOnce wants exactly one image.needed, job.done (succeeded) and
// report.stored for digest, image.needed first.
func checkNATSOnce(es []seen) error {
	for _, k := range []string{"image.needed", "job.done", "report.stored"} {
		if count(es, k) != 1 {
			return fmt.Errorf("want one %s, got %s", k, kinds(es))
		}
	}
	if i := index(es, "image.needed"); i != 0 {
		return fmt.Errorf("image.needed is not first: %s", kinds(es))
	}
	if es[index(es, "job.done")].Outcome != string(eventsv1.OutcomeSucceeded) {
		return fmt.Errorf("job.done not succeeded: %s", kinds(es))
	}
	return nil
}
