package bus

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	"github.com/crowsnest-dev/crowsnest/test/support/natstest"
)

func TestOnReportDeletedDeliversDigestsAndSkipsGarbage(t *testing.T) {
	_, url := natstest.StartT(t)
	p, err := Connect(url, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	waitConnected(t, p)
	got := make(chan string, 4)
	unsubscribe, err := p.OnReportDeleted(func(digest string) { got <- digest })
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = unsubscribe() }()

	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	const digest = "sha256:0000000000000000000000000000000000000000000000000000000000000001"
	ev, err := eventsv1.New(eventsv1.SourceResultsAPI, eventsv1.TypeReportDeleted, eventsv1.ID(eventsv1.TypeReportDeleted, digest), digest,
		time.Now(), eventsv1.ReportDeleted{Digest: digest})
	if err != nil {
		t.Fatal(err)
	}
	valid, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	// Garbage and an event without a digest come first: both are skipped,
	// and the subscription keeps going.
	for _, data := range [][]byte{[]byte("not json"), []byte(`{"specversion":"1.0","data":{}}`), valid} {
		if err := nc.Publish(eventsv1.SubjectReportDeleted, data); err != nil {
			t.Fatal(err)
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	select {
	case d := <-got:
		if d != digest {
			t.Errorf("digest %q, want %q", d, digest)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no deletion delivered within 5s")
	}
	select {
	case d := <-got:
		t.Errorf("unexpected second delivery %q", d)
	case <-time.After(200 * time.Millisecond):
	}
}
