package events_test

import (
	"bytes"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	"github.com/crowsnest-dev/crowsnest/test/support/natstest"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/apitest"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/bomtest"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/events"
)

// fast makes the bus reconnect and poll its outbox quickly.
var fast = events.Timing{RetryWait: 100 * time.Millisecond, RelayPoll: 200 * time.Millisecond}

// TestOutboxWaitsForNATS: a report stored while NATS is down is stored and
// served, and its event waits in the outbox (counted in the outbox
// metrics); when NATS is back the relay publishes it exactly once, as it
// was written, and the outbox is empty.
func TestOutboxWaitsForNATS(t *testing.T) {
	ns, url := natstest.StartT(t)
	createStream(t, url)
	srv := apitest.Start(t, apitest.WithNATS(url), apitest.WithEventTiming(fast))
	ctx := testCtx(t, 60*time.Second)
	_, js := natsConn(t, url)
	waitFor(t, func() bool { return metric(t, srv, "crowsnest_results_api_nats_connected", "") == 1 })

	ns.Stop()
	waitFor(t, func() bool { return metric(t, srv, "crowsnest_results_api_nats_connected", "") == 0 })
	d := bomtest.Digest(1)
	if code := put(t, srv, d, bomV(1)); code != http.StatusCreated {
		t.Fatalf("put with NATS down: %d", code)
	}
	if resp, err := srv.Client().Get(srv.URL + "/api/v1/reports/" + d); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("get with NATS down: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	// Several relay polls later the event still waits, and is measured.
	time.Sleep(3 * fast.RelayPoll)
	all := outboxRows(t, srv.DatabaseURL)
	rows := reportRows(all)
	if len(rows) != 1 || rows[0].Subject != eventsv1.SubjectReportStored || rows[0].Digest != d ||
		len(all) != 2 || all[1].Subject != eventsv1.SubjectFindingsChanged {
		t.Fatalf("outbox %+v, want the report.stored of %s and its baseline findings.changed", all, d)
	}
	waitFor(t, func() bool {
		return metric(t, srv, "crowsnest_results_api_outbox_depth", "") == 2 &&
			metric(t, srv, "crowsnest_results_api_outbox_oldest_age_seconds", "") > 0
	})

	if err := ns.Restart(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return len(outboxRows(t, srv.DatabaseURL)) == 0 })
	got := streamEvents(ctx, t, js, "crowsnest.report.")
	if len(got) != 1 || got[0].MsgID != rows[0].EventID || !bytes.Equal(got[0].Data, rows[0].Payload) {
		t.Fatalf("stream %+v, want exactly the outbox event %s as written", got, rows[0].EventID)
	}
	// Nothing more comes: it was published once.
	time.Sleep(3 * fast.RelayPoll)
	if got := streamEvents(ctx, t, js, "crowsnest.report."); len(got) != 1 {
		t.Fatalf("stream holds %d report events, want 1", len(got))
	}
	waitFor(t, func() bool {
		return metric(t, srv, "crowsnest_results_api_outbox_depth", "") == 0 &&
			metric(t, srv, "crowsnest_results_api_outbox_oldest_age_seconds", "") == 0 &&
			metric(t, srv, "crowsnest_results_api_events_published_total", `subject="crowsnest.report.stored"`) == 1
	})
}

// TestOutboxOrderPerDigestAcrossReplicas runs two replicas on one database:
// both relays publish at once. First with NATS up, 8 digests each stored,
// deleted and stored again, the three changes of a digest alternating
// between the replicas: every event is published exactly once (counted on
// a plain subscription, which JetStream's deduplication does not hide),
// and each digest's events reach the stream in order. Then the same with
// NATS down until all changes are made.
func TestOutboxOrderPerDigestAcrossReplicas(t *testing.T) {
	ns, url := natstest.StartT(t)
	createStream(t, url)
	ctx := testCtx(t, 60*time.Second)
	nc, js := natsConn(t, url)
	a := apitest.Start(t, apitest.WithNATS(url), apitest.WithEventTiming(fast))
	// One replica's consumer set-up at a time (see createStream).
	waitFor(t, func() bool { return srvSubscribed(ctx, js) })
	b := apitest.Start(t, apitest.WithNATS(url), apitest.WithEventTiming(fast), apitest.WithDatabaseURL(a.DatabaseURL))
	sub, err := nc.SubscribeSync("crowsnest.report.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}

	const digests = 8
	changes := func(first int) {
		t.Helper()
		var wg sync.WaitGroup
		for n := first; n < first+digests; n++ {
			wg.Go(func() {
				d := bomtest.Digest(n)
				if code := put(t, a, d, bomV(1)); code != http.StatusCreated {
					t.Errorf("put %s: %d", d, code)
				}
				if code := del(t, b, d); code != http.StatusNoContent {
					t.Errorf("delete %s: %d", d, code)
				}
				if code := put(t, a, d, bomV(2)); code != http.StatusCreated {
					t.Errorf("put again %s: %d", d, code)
				}
			})
		}
		wg.Wait()
	}
	// want is the outbox's order of each digest's events, read as they are
	// written (the relays delete them as they go).
	checkOrder := func(events []streamEvent, first int) {
		t.Helper()
		byDigest := map[string][]string{}
		for _, e := range events {
			byDigest[e.Digest] = append(byDigest[e.Digest], e.Subject)
		}
		want := []string{eventsv1.SubjectReportStored, eventsv1.SubjectReportDeleted, eventsv1.SubjectReportStored}
		for n := first; n < first+digests; n++ {
			if got := byDigest[bomtest.Digest(n)]; !slices.Equal(got, want) {
				t.Errorf("digest %d: stream order %v, want %v", n, got, want)
			}
		}
	}

	changes(1)
	waitFor(t, func() bool { return len(outboxRows(t, a.DatabaseURL)) == 0 })
	seen := map[string]int{}
	for {
		m, err := sub.NextMsg(500 * time.Millisecond)
		if err != nil {
			break
		}
		seen[m.Header.Get(nats.MsgIdHdr)]++
	}
	if len(seen) != 3*digests {
		t.Errorf("%d distinct events published, want %d", len(seen), 3*digests)
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("event %s published %d times", id, n)
		}
	}
	first := streamEvents(ctx, t, js, "crowsnest.report.")
	if len(first) != 3*digests {
		t.Fatalf("stream holds %d report events, want %d", len(first), 3*digests)
	}
	checkOrder(first, 1)

	ns.Stop()
	waitFor(t, func() bool {
		return metric(t, a, "crowsnest_results_api_nats_connected", "") == 0 && metric(t, b, "crowsnest_results_api_nats_connected", "") == 0
	})
	changes(101)
	if n := len(reportRows(outboxRows(t, a.DatabaseURL))); n != 3*digests {
		t.Fatalf("outbox holds %d events with NATS down, want %d", n, 3*digests)
	}
	if err := ns.Restart(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return len(outboxRows(t, a.DatabaseURL)) == 0 })
	all := streamEvents(ctx, t, js, "crowsnest.report.")
	if len(all) != 6*digests {
		t.Fatalf("stream holds %d report events, want %d", len(all), 6*digests)
	}
	checkOrder(all[len(first):], 101)
}

// TestPoisonEventDoesNotBlockOtherDigests: an event JetStream refuses
// every time (here larger than the server's max_payload) is retried with
// backoff, its attempts and the failures metric counting up, and holds
// back only its own digest's later event; another digest's event is
// published at once. Once the poison row is deleted (what an operator
// does), its digest's event follows.
func TestPoisonEventDoesNotBlockOtherDigests(t *testing.T) {
	_, url := natstest.StartT(t)
	createStream(t, url)
	srv := apitest.Start(t, apitest.WithNATS(url), apitest.WithEventTiming(events.Timing{
		RetryWait: 100 * time.Millisecond, RelayPoll: 200 * time.Millisecond, RetryMin: 100 * time.Millisecond, RetryMax: 400 * time.Millisecond}))
	ctx := testCtx(t, 60*time.Second)
	_, js := natsConn(t, url)
	poisoned, other := bomtest.Digest(66), bomtest.Digest(67)
	conn, err := pgx.Connect(ctx, srv.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	huge := fmt.Sprintf(`{"pad":"%s"}`, strings.Repeat("x", 2<<20))
	if _, err := conn.Exec(ctx, `INSERT INTO event_outbox (subject, digest, event_id, payload) VALUES ($1, $2, 'poison', $3)`,
		eventsv1.SubjectReportStored, poisoned, huge); err != nil {
		t.Fatal(err)
	}
	if code := put(t, srv, poisoned, bomV(1)); code != http.StatusCreated {
		t.Fatalf("put: %d", code)
	}
	if code := put(t, srv, other, bomV(1)); code != http.StatusCreated {
		t.Fatalf("put: %d", code)
	}
	waitFor(t, func() bool { return len(streamEvents(ctx, t, js, "crowsnest.report.")) == 1 })
	if got := streamEvents(ctx, t, js, "crowsnest.report."); got[0].Digest != other {
		t.Fatalf("published %s, want %s's event", got[0].Digest, other)
	}
	// Left: the poison row, then the poisoned digest's report.stored and
	// findings.changed.
	waitFor(t, func() bool { rows := outboxRows(t, srv.DatabaseURL); return len(rows) == 3 && rows[0].Attempts >= 3 })

	// Counted: the failures metric equals the poison row's attempts (read
	// between two equal scrapes, so no attempt falls in between).
	label := `subject="` + eventsv1.SubjectReportStored + `"`
	waitFor(t, func() bool {
		before := metric(t, srv, "crowsnest_results_api_outbox_publish_failures_total", label)
		rows := outboxRows(t, srv.DatabaseURL)
		after := metric(t, srv, "crowsnest_results_api_outbox_publish_failures_total", label)
		return before == after && float64(rows[0].Attempts) == after
	})
	rows := outboxRows(t, srv.DatabaseURL)
	if rows[0].EventID != "poison" || !strings.Contains(rows[0].LastError, "maximum payload") {
		t.Errorf("poison row %s: last error %q", rows[0].EventID, rows[0].LastError)
	}
	if rows[1].Digest != poisoned || rows[1].Attempts != 0 {
		t.Errorf("the poisoned digest's event %+v, want it waiting untried", rows[1])
	}
	if n := len(streamEvents(ctx, t, js, "crowsnest.report.")); n != 1 {
		t.Fatalf("stream holds %d report events, want 1", n)
	}

	if _, err := conn.Exec(ctx, `DELETE FROM event_outbox WHERE event_id = 'poison'`); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return len(outboxRows(t, srv.DatabaseURL)) == 0 })
	got := streamEvents(ctx, t, js, "crowsnest.report.")
	if len(got) != 2 || got[1].Digest != poisoned {
		t.Fatalf("stream %+v, want %s's event second", got, poisoned)
	}
}
