package bus

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/nats-io/nats.go"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

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
	// Garbage and an event without a digest come first, published with core
	// NATS (the stream stores them all the same): both are terminated, and
	// the consumer keeps going.
	for _, data := range [][]byte{[]byte("not json"), []byte(`{"specversion":"1.0","data":{}}`), valid} {
		if err := nc.Publish(eventsv1.SubjectReportDeleted, data); err != nil {
			t.Fatal(err)
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	expectOnly(t, got, digest)
}

// TestOnReportDeletedDropsForgedEvents plays an attacker on
// crowsnest.report.deleted: an event claiming the operator as its source and
// one dated 9999-01-01 trigger no rescan; each is counted by its broken rule
// and logged once without its payload; the valid one after them triggers
// the rescan.
func TestOnReportDeletedDropsForgedEvents(t *testing.T) {
	_, url := natstest.StartT(t)
	p, err := Connect(url, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var mu sync.Mutex
	var logs []string
	p.log = funcr.New(func(prefix, args string) {
		mu.Lock()
		logs = append(logs, args)
		mu.Unlock()
	}, funcr.Options{})
	eventsInvalid.Reset()
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
	const (
		forged = "sha256:00000000000000000000000000000000000000000000000000000000000000f1"
		valid  = "sha256:0000000000000000000000000000000000000000000000000000000000000002"
	)
	for _, e := range []struct {
		source, id, digest string
		at                 time.Time
	}{
		{eventsv1.SourceOperator, "forged-source", forged, time.Now()},
		{eventsv1.SourceResultsAPI, "forged-future", forged, time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)},
		{eventsv1.SourceResultsAPI, "valid", valid, time.Now()},
	} {
		ev, err := eventsv1.New(e.source, eventsv1.TypeReportDeleted, e.id, e.digest, e.at,
			eventsv1.ReportDeleted{Digest: e.digest, Image: "forged-payload-marker"})
		if err != nil {
			t.Fatal(err)
		}
		data, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		if err := nc.Publish(eventsv1.SubjectReportDeleted, data); err != nil {
			t.Fatal(err)
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	expectOnly(t, got, valid)

	want := map[string]float64{"crowsnest.report.deleted/source": 1, "crowsnest.report.deleted/time": 1}
	if got := invalidCounts(t); len(got) != len(want) || got["crowsnest.report.deleted/source"] != 1 || got["crowsnest.report.deleted/time"] != 1 {
		t.Errorf("crowsnest_events_invalid_total %v, want %v", got, want)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(logs) != 2 || !strings.Contains(logs[0], `"id"="forged-source"`) || !strings.Contains(logs[0], `"reason"="source"`) ||
		!strings.Contains(logs[1], `"id"="forged-future"`) || !strings.Contains(logs[1], `"reason"="time"`) {
		t.Errorf("log lines %q, want one per forged event with its id and reason", logs)
	}
	for _, l := range logs {
		if strings.Contains(l, "forged-payload-marker") {
			t.Errorf("log line holds the payload: %s", l)
		}
	}
}

// invalidCounts reads crowsnest_events_invalid_total from controller-runtime's
// registry, which the manager serves, keyed by subject/reason.
func invalidCounts(t *testing.T) map[string]float64 {
	t.Helper()
	mfs, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "crowsnest_events_invalid_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			got[labels["subject"]+"/"+labels["reason"]] = m.GetCounter().GetValue()
		}
	}
	return got
}

// expectOnly waits (up to 5 s) for exactly one delivery, of want, and then
// checks that no second one follows.
func expectOnly(t *testing.T, got <-chan string, want string) {
	t.Helper()
	select {
	case d := <-got:
		if d != want {
			t.Fatalf("delivery of %q, want only %q", d, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("%s was not delivered within 5s", want)
	}
	select {
	case d := <-got:
		t.Errorf("unexpected second delivery %q", d)
	case <-time.After(200 * time.Millisecond):
	}
}
