package e2echart

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
)

// subscriber keeps the events of some subjects published after it
// subscribed, read like any other tool reads them: the chart's reader
// user, its password from the chart's Secret, through a port-forward to
// the NATS Service.
type subscriber struct {
	mu     sync.Mutex
	events []eventsv1.Event
}

// subscribe connects as the chart's reader and starts an ordered consumer
// of subjects on the CROWSNEST stream, delivering new messages only.
func subscribe(ctx context.Context, t *testing.T, c kubernetes.Interface, subjects ...string) *subscriber {
	t.Helper()
	secret, err := c.CoreV1().Secrets(namespace).Get(ctx, release+"-nats-users", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	password := string(secret.Data[string(eventsv1.UserReader)])
	if password == "" {
		t.Fatalf("the chart's Secret %s-nats-users has no %s password", release, eventsv1.UserReader)
	}
	addr := portForward(ctx, t, namespace, "svc/"+release+"-nats:4222")
	nc, err := nats.Connect("nats://"+addr, nats.UserInfo(string(eventsv1.UserReader), password))
	if err != nil {
		t.Fatalf("connect to NATS as %s: %v", eventsv1.UserReader, err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	stream, err := js.Stream(sctx, eventsv1.StreamName)
	if err != nil {
		t.Fatalf("stream %s as %s: %v", eventsv1.StreamName, eventsv1.UserReader, err)
	}
	cons, err := stream.OrderedConsumer(sctx, jetstream.OrderedConsumerConfig{FilterSubjects: subjects, DeliverPolicy: jetstream.DeliverNewPolicy})
	if err != nil {
		t.Fatalf("consumer as %s: %v", eventsv1.UserReader, err)
	}
	s := &subscriber{}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		ev, err := eventsv1.Parse(m.Subject(), m.Data(), time.Now(), time.Hour)
		if err != nil {
			t.Errorf("invalid event on %s: %v", m.Subject(), err)
			return
		}
		s.mu.Lock()
		s.events = append(s.events, ev)
		s.mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cc.Stop)
	return s
}

// digestOf is the digest an event's payload is about ("" when it has none).
func digestOf(ev eventsv1.Event) string {
	var p struct {
		Digest string `json:"digest"`
	}
	_ = json.Unmarshal(ev.Data, &p)
	return p.Digest
}

// about returns the events received so far of type typ about digest.
func (s *subscriber) about(typ, digest string) []eventsv1.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []eventsv1.Event
	for _, ev := range s.events {
		if ev.Type == typ && digestOf(ev) == digest {
			out = append(out, ev)
		}
	}
	return out
}

// wait polls until about(typ, digest) holds at least one event.
func (s *subscriber) wait(ctx context.Context, typ, digest string, timeout time.Duration) ([]eventsv1.Event, error) {
	deadline := time.Now().Add(timeout)
	for {
		if evs := s.about(typ, digest); len(evs) > 0 {
			return evs, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("no %s about %s within %s", typ, digest, timeout)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}
