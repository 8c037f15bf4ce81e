package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
)

// TestEventBusRefusesAttackers plays a Pod with network access to NATS:
// without credentials it cannot connect; with the read-only reader
// credentials it cannot publish a forged event or delete the stream. The
// forged events are looked for on the stream afterwards: none may be there.
func TestEventBusRefusesAttackers(t *testing.T) {
	needFull(t)
	ctx := withTimeout(t, 2*time.Minute)
	url := shared.NATS.URL()
	rec := subscribeNATS(t, url)

	if nc, err := nats.Connect(url, nats.MaxReconnects(0)); err == nil {
		nc.Close()
		t.Fatal("an anonymous client connected to NATS")
	}
	if nc, err := nats.Connect(url, nats.UserInfo(string(eventsv1.UserOperator), "guessed"), nats.MaxReconnects(0)); err == nil {
		nc.Close()
		t.Fatal("a guessed operator password connected to NATS")
	}

	nc, err := nats.Connect(url, nats.UserInfo(string(eventsv1.UserReader), shared.NATS.Password(eventsv1.UserReader)),
		nats.MaxReconnects(0), nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	if err != nil {
		t.Fatalf("reader: %v", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	forged := "sha256:" + fmt.Sprintf("%064x", time.Now().UnixNano())
	for _, subject := range []string{eventsv1.SubjectJobDone, eventsv1.SubjectImageNeeded, eventsv1.SubjectReportDeleted, eventsv1.SubjectReportStored} {
		ev, err := eventsv1.New(eventsv1.SourceOperator, eventsv1.TypeJobDone, eventsv1.ID("forged", subject), forged,
			time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), map[string]string{"digest": forged, "outcome": "succeeded"})
		if err != nil {
			t.Fatal(err)
		}
		body, _ := json.Marshal(ev)
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		if _, err := js.Publish(pctx, subject, body); err == nil {
			t.Errorf("reader published %s", subject)
		}
		cancel()
		if err := nc.Publish(subject, body); err != nil { // core NATS: refused by the server, asynchronously
			t.Logf("core publish %s: %v", subject, err)
		}
	}
	dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	if err := js.DeleteStream(dctx, eventsv1.StreamName); err == nil {
		t.Error("reader deleted the stream")
	}
	cancel()

	// A marker published by the operator's own user after the forgeries
	// proves the recorder has read past them; then none may have arrived.
	// It goes to inventory.snapshot, which nothing consumes yet, so no
	// service state changes.
	op, err := nats.Connect(url, nats.UserInfo(string(eventsv1.UserOperator), shared.NATS.Password(eventsv1.UserOperator)))
	if err != nil {
		t.Fatalf("operator user: %v", err)
	}
	defer op.Close()
	opJS, _ := jetstream.New(op)
	marker := "sha256:" + fmt.Sprintf("%064x", time.Now().UnixNano()+1)
	ev, _ := eventsv1.New(eventsv1.SourceOperator, "dev.crowsnest.e2e.marker", eventsv1.ID("marker", marker), marker, time.Now(), map[string]string{"digest": marker})
	body, _ := json.Marshal(ev)
	if _, err := opJS.Publish(ctx, eventsv1.SubjectInventorySnapshot, body); err != nil {
		t.Fatalf("operator publish: %v", err)
	}
	eventually(t, 30*time.Second, "marker read", func() error {
		if len(rec.of(marker)) == 0 {
			return fmt.Errorf("marker not seen yet")
		}
		return nil
	})
	if got := rec.of(forged); len(got) != 0 {
		t.Fatalf("forged events reached the stream: %s", kinds(got))
	}
	if _, err := js.Stream(ctx, eventsv1.StreamName); err != nil {
		t.Fatalf("stream gone: %v", err)
	}
}
