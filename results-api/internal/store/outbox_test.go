package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/test/support/pgtest"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
)

// announcer writes a small JSON event per change; internal/events writes
// the real CloudEvents, tested there against JetStream.
type announcer struct{ refuse bool }

func (a announcer) ReportStored(s report.Summary) (store.OutboxEvent, error) {
	return a.event("stored", s)
}

func (a announcer) ReportDeleted(s report.Summary) (store.OutboxEvent, error) {
	return a.event("deleted", s)
}

// changeAnnouncer is announcer with findings.changed events too
// (store.ChangeAnnouncer).
type changeAnnouncer struct{ announcer }

func (a changeAnnouncer) FindingsChanged(c report.Change, _ store.RunsIn) (store.OutboxEvent, error) {
	if a.refuse {
		return store.OutboxEvent{}, errors.New("announcer refuses")
	}
	payload, err := json.Marshal(map[string]any{"kind": "changed", "digest": c.Digest, "baseline": c.Baseline,
		"new": len(c.New), "resolved": len(c.Resolved), "kevAdded": len(c.KEVAdded)})
	return store.OutboxEvent{Subject: "crowsnest.findings.changed", Digest: c.Digest,
		EventID: fmt.Sprintf("changed-%s-%d", c.Digest[7:15], c.ID), Payload: payload}, err
}

func (a announcer) event(kind string, s report.Summary) (store.OutboxEvent, error) {
	if a.refuse {
		return store.OutboxEvent{}, errors.New("announcer refuses")
	}
	payload, err := json.Marshal(map[string]any{"kind": kind, "digest": s.Digest, "findings": s.Findings})
	return store.OutboxEvent{Subject: "crowsnest.report." + kind, Digest: s.Digest,
		EventID: fmt.Sprintf("%s-%s-%d", kind, s.Digest[7:15], s.Findings), Payload: payload}, err
}

func openDSN(t *testing.T, dsn string, a store.Announcer) (*store.Store, *errLog) {
	t.Helper()
	log := &errLog{}
	st, err := store.Open(ctx(t), dsn, store.Options{OnError: log.Add, Announcer: a})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st, log
}

type outboxRow struct {
	ID                        int64
	Subject, EventID, Payload string
	Attempts                  int
	LastError                 string
}

func outbox(t *testing.T, dsn string) []outboxRow {
	t.Helper()
	conn := connect(t, dsn)
	rows, err := conn.Query(ctx(t), `SELECT id, subject, event_id, payload::text, attempts, last_error FROM event_outbox ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []outboxRow
	for rows.Next() {
		var r outboxRow
		if err := rows.Scan(&r.ID, &r.Subject, &r.EventID, &r.Payload, &r.Attempts, &r.LastError); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func ids(rows []outboxRow) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.EventID
	}
	return out
}

// TestOutboxWrittenWithTheChange: each committed change (create, the same
// bytes again, replace, delete) leaves exactly its event in the outbox; a
// change that fails leaves none, and an event that cannot be built fails
// the change.
func TestOutboxWrittenWithTheChange(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	st, _ := openDSN(t, dsn, announcer{})
	d := digest(1)
	put(t, st, newReport(1, "reg/app@"+d, t0, `{"v":1}`, finding("CVE-1", report.High, "a", "")))
	put(t, st, newReport(1, "reg/app@"+d, t0, `{"v":1}`, finding("CVE-1", report.High, "a", "")))
	put(t, st, newReport(1, "reg/app@"+d, t0.Add(time.Hour), `{"v":2}`))
	if _, err := st.PutReport(ctx(t), newReport(1, "", t0, `{"v":3}`, finding("BAD\x00", report.Low, "b", ""))); err == nil {
		t.Fatal("put with a NUL byte succeeded")
	}
	if _, err := st.DeleteReport(ctx(t), d); err != nil {
		t.Fatal(err)
	}
	if _, err := st.DeleteReport(ctx(t), d); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("second delete: %v, want ErrNotFound", err)
	}
	rows := outbox(t, dsn)
	short := d[7:15]
	want := []string{"stored-" + short + "-1", "stored-" + short + "-1", "stored-" + short + "-0", "deleted-" + short + "-0"}
	if got := ids(rows); !slices.Equal(got, want) {
		t.Fatalf("outbox %v, want %v", got, want)
	}
	if rows[3].Subject != "crowsnest.report.deleted" || rows[3].Payload != `{"digest":"`+d+`","findings":0,"kind":"deleted"}` {
		t.Errorf("delete event %+v", rows[3])
	}

	// A store whose events cannot be built stores nothing.
	refusing, _ := openDSN(t, dsn, announcer{refuse: true})
	if _, err := refusing.PutReport(ctx(t), newReport(2, "", t0, `{}`)); err == nil {
		t.Fatal("put succeeded without its event")
	}
	if _, err := st.GetSummary(ctx(t), digest(2)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("report stored without its event: %v", err)
	}
	// Without an announcer (no NATS) nothing is written to the outbox.
	plain, _ := openDSN(t, dsn, nil)
	put(t, plain, newReport(3, "", t0, `{}`))
	if n := len(outbox(t, dsn)); n != 4 {
		t.Fatalf("outbox holds %d events, want the 4 from before", n)
	}
}

// publishLog records what a relay's publish function was handed.
type publishLog struct {
	mu   sync.Mutex
	seen []string
}

func (p *publishLog) add(evs []store.OutboxEvent) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, e := range evs {
		p.seen = append(p.seen, e.EventID)
	}
}

func (p *publishLog) take() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.seen
	p.seen = nil
	return out
}

func retryIn(d time.Duration) func(int) time.Duration { return func(int) time.Duration { return d } }

// TestRelayOutboxOrderAndRetry: a relay step takes only the oldest event
// of each digest; a failed one is rescheduled and holds back its digest's
// later events but not another digest's; an event not tried keeps its
// turn untouched.
func TestRelayOutboxOrderAndRetry(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	st, _ := openDSN(t, dsn, announcer{})
	a := digest(1)
	put(t, st, newReport(1, "", t0, `{"a":1}`))
	put(t, st, newReport(2, "", t0, `{"b":1}`))
	if _, err := st.DeleteReport(ctx(t), a); err != nil {
		t.Fatal(err)
	}
	put(t, st, newReport(1, "", t0, `{"a":2}`, finding("CVE-1", report.Low, "x", "")))
	all := ids(outbox(t, dsn)) // a stored, b stored, a deleted, a stored again

	log := &publishLog{}
	step := func(publish func([]store.OutboxEvent) []error) store.RelayResult {
		t.Helper()
		res, err := st.RelayOutbox(ctx(t), 10, func(_ context.Context, evs []store.OutboxEvent) []error {
			log.add(evs)
			return publish(evs)
		}, retryIn(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	ok := func(evs []store.OutboxEvent) []error { return make([]error, len(evs)) }

	// Not tried (publish stopped early): nothing changes.
	if res := step(func([]store.OutboxEvent) []error { return nil }); res != (store.RelayResult{Claimed: 2}) {
		t.Fatalf("untried step %+v", res)
	}
	if got := log.take(); !slices.Equal(got, []string{all[0], all[1]}) {
		t.Fatalf("first claim %v, want the head of each digest %v", got, all[:2])
	}
	if rows := outbox(t, dsn); len(rows) != 4 || rows[0].Attempts != 0 {
		t.Fatalf("untried step changed the outbox: %+v", rows)
	}

	// a's head fails, b's is published.
	res := step(func(evs []store.OutboxEvent) []error {
		return []error{errors.New("nats: maximum payload exceeded"), nil}
	})
	if res != (store.RelayResult{Claimed: 2, Published: 1, Failed: 1}) {
		t.Fatalf("step %+v", res)
	}
	log.take()
	rows := outbox(t, dsn)
	if got := ids(rows); !slices.Equal(got, []string{all[0], all[2], all[3]}) {
		t.Fatalf("after the step the outbox holds %v", got)
	}
	if rows[0].Attempts != 1 || rows[0].LastError != "nats: maximum payload exceeded" {
		t.Errorf("failed event %+v, want 1 attempt and its error", rows[0])
	}
	// a's head waits out its retry; its later events wait behind it.
	if res := step(ok); res.Claimed != 0 {
		t.Fatalf("claimed %v during the head's backoff", log.take())
	}
	stats, err := st.OutboxStats(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if stats.Depth != 3 || stats.NextAttempt <= 59*time.Minute || stats.NextAttempt > time.Hour || stats.OldestAge <= 0 {
		t.Errorf("stats %+v, want depth 3 and the next attempt in an hour", stats)
	}
	// The backoff ends (an hour, so that a slow CI machine cannot see it end
	// before the step above: a 300 ms backoff did).
	if _, err := connect(t, dsn).Exec(ctx(t), `UPDATE event_outbox SET next_attempt_at = now() WHERE event_id = $1`, all[0]); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if res := step(ok); res != (store.RelayResult{Claimed: 1, Published: 1}) {
			t.Fatalf("step %+v", res)
		}
	}
	if got := log.take(); !slices.Equal(got, []string{all[0], all[2], all[3]}) {
		t.Fatalf("a's events published as %v, want in order %v", got, []string{all[0], all[2], all[3]})
	}
	if stats, err := st.OutboxStats(ctx(t)); err != nil || stats != (store.OutboxStats{NextAttempt: -1}) {
		t.Fatalf("stats of the empty outbox %+v (%v)", stats, err)
	}
}

// TestRelayOutboxCrashAfterPublish: a relay that dies after publishing and
// before its commit (here its connection is cancelled, which rolls the
// transaction back as a crash does) leaves the events in place, untouched,
// for the next relay: at least once.
func TestRelayOutboxCrashAfterPublish(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	st, _ := openDSN(t, dsn, announcer{})
	put(t, st, newReport(1, "", t0, `{}`))
	crashed, crash := context.WithCancel(ctx(t))
	published := 0
	_, err := st.RelayOutbox(crashed, 10, func(_ context.Context, evs []store.OutboxEvent) []error {
		published += len(evs)
		crash()
		return make([]error, len(evs))
	}, retryIn(time.Second))
	if err == nil || published != 1 {
		t.Fatalf("crashed step: %v after %d published", err, published)
	}
	if rows := outbox(t, dsn); len(rows) != 1 || rows[0].Attempts != 0 {
		t.Fatalf("after the crash the outbox holds %+v, want the event untouched", rows)
	}
	res, err := st.RelayOutbox(ctx(t), 10, func(_ context.Context, evs []store.OutboxEvent) []error { return make([]error, len(evs)) }, retryIn(time.Second))
	if err != nil || res != (store.RelayResult{Claimed: 1, Published: 1}) {
		t.Fatalf("next relay: %+v, %v", res, err)
	}
	if rows := outbox(t, dsn); len(rows) != 0 {
		t.Fatalf("outbox %+v after the next relay", rows)
	}
}

// TestRelayOutboxReplicas runs two relays, each on its own store (two
// replicas), over one outbox of 90 events of 30 digests: every event is
// handed to publish exactly once, and a digest's next event only after the
// publish of the one before has ended.
func TestRelayOutboxReplicas(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	writer, _ := openDSN(t, dsn, announcer{})
	const digests = 30
	for n := 1; n <= digests; n++ {
		put(t, writer, newReport(n, "", t0, `{"v":1}`))
		if _, err := writer.DeleteReport(ctx(t), digest(n)); err != nil {
			t.Fatal(err)
		}
		put(t, writer, newReport(n, "", t0, `{"v":2}`, finding("CVE-1", report.Low, "x", "")))
	}
	want := outbox(t, dsn)

	type span struct{ start, end int64 }
	var clock atomic.Int64
	var mu sync.Mutex
	spans := map[int64][]span{} // row id → publishes
	perRelay := [2]int{}
	var wg sync.WaitGroup
	for r := range 2 {
		st, _ := openDSN(t, dsn, nil)
		wg.Go(func() {
			for idle := 0; idle < 3; {
				res, err := st.RelayOutbox(ctx(t), 7, func(_ context.Context, evs []store.OutboxEvent) []error {
					for _, e := range evs {
						start := clock.Add(1)
						time.Sleep(time.Millisecond)
						mu.Lock()
						spans[e.ID] = append(spans[e.ID], span{start, clock.Add(1)})
						perRelay[r]++
						mu.Unlock()
					}
					return make([]error, len(evs))
				}, retryIn(time.Second))
				if err != nil {
					t.Error(err)
					return
				}
				if res.Claimed == 0 {
					idle++
					time.Sleep(20 * time.Millisecond)
				}
			}
		})
	}
	wg.Wait()
	if rows := outbox(t, dsn); len(rows) != 0 {
		t.Fatalf("%d events left", len(rows))
	}
	if len(spans) != len(want) {
		t.Fatalf("%d events published, want %d", len(spans), len(want))
	}
	for i, row := range want {
		if n := len(spans[row.ID]); n != 1 {
			t.Errorf("event %d (%s) published %d times", row.ID, row.EventID, n)
		}
		if i%3 > 0 && spans[row.ID][0].start < spans[want[i-1].ID][0].end {
			t.Errorf("event %s published before the previous one of its digest had been", row.EventID)
		}
	}
	t.Logf("events published per relay: %v", perRelay)
}
