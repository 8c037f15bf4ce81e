package events_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	"github.com/crowsnest-dev/crowsnest/test/support/natstest"

	"github.com/crowsnest-dev/crowsnest/results-api/api"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/apitest"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/bomtest"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/events"
)

// deliveries waits until the scan-status consumer has settled (nothing
// pending or waiting for an ack) and returns how often it delivered.
func deliveries(ctx context.Context, t *testing.T, js jetstream.JetStream, acked uint64) uint64 {
	t.Helper()
	c, err := js.Consumer(ctx, eventsv1.StreamName, events.Durable)
	if err != nil {
		t.Fatal(err)
	}
	var info *jetstream.ConsumerInfo
	waitFor(t, func() bool {
		info, err = c.Info(ctx)
		return err == nil && info.AckFloor.Stream == acked && info.NumAckPending == 0 && info.NumPending == 0
	})
	return info.Delivered.Consumer
}

// TestScanStatusSurvivesPostgresOutage: the scan-status consumer an
// earlier version created (at most 20 deliveries) is upgraded in place;
// an operator event that arrives while the API's database refuses
// connections is redelivered — more than those 20 times here, with the
// redelivery delay shortened — and applied exactly once when the database
// is back.
func TestScanStatusSurvivesPostgresOutage(t *testing.T) {
	_, url := natstest.StartT(t)
	ctx := testCtx(t, 60*time.Second)
	_, js := natsConn(t, url)
	stream, err := eventsv1.EnsureStream(ctx, js)
	if err != nil {
		t.Fatal(err)
	}
	const oldMaxDeliver = 20
	if _, err := stream.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: events.Durable,
		FilterSubjects: []string{eventsv1.SubjectImageNeeded, eventsv1.SubjectJobDone}, AckPolicy: jetstream.AckExplicitPolicy,
		AckWait: 30 * time.Second, MaxDeliver: oldMaxDeliver, DeliverPolicy: jetstream.DeliverAllPolicy}); err != nil {
		t.Fatal(err)
	}
	srv := apitest.Start(t, apitest.WithNATS(url), apitest.WithEventTiming(events.Timing{
		RetryWait: 100 * time.Millisecond, Redelivery: []time.Duration{10 * time.Millisecond}}))
	waitFor(t, func() bool {
		c, err := js.Consumer(ctx, eventsv1.StreamName, events.Durable)
		if err != nil {
			return false
		}
		cfg := c.CachedInfo().Config
		return cfg.MaxDeliver == -1 && cfg.AckWait == 60*time.Second && len(cfg.BackOff) == 0
	})

	name := dbName(t, srv.DatabaseURL)
	adminExec(t, srv.DatabaseURL, `ALTER DATABASE `+name+` ALLOW_CONNECTIONS false`)
	adminExec(t, srv.DatabaseURL, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1`, name)
	waitFor(t, func() bool {
		resp, err := srv.Client().Get(srv.URL + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusServiceUnavailable
	})

	d := bomtest.Digest(5)
	publish(ctx, t, js, eventsv1.SubjectImageNeeded, eventsv1.SourceOperator, eventsv1.TypeImageNeeded, "outage-needed", time.Now(),
		eventsv1.ImageNeeded{Digest: d, Image: "demo@" + d, Namespace: "ns", Scanner: "s", Job: "job-1", Reason: eventsv1.NeedNew, Attempt: 1})
	failed := func() float64 {
		return metric(t, srv, "crowsnest_results_api_events_failed_total", `stage="consume",subject="crowsnest.image.needed"`)
	}
	waitFor(t, func() bool { return failed() > oldMaxDeliver+5 })
	adminExec(t, srv.DatabaseURL, `ALTER DATABASE `+name+` ALLOW_CONNECTIONS true`)

	waitFor(t, func() bool { return scanState(t, srv, d) == api.Scanning })
	delivered := deliveries(ctx, t, js, 1)
	consumed := metric(t, srv, "crowsnest_results_api_events_consumed_total", `subject="crowsnest.image.needed"`)
	if consumed != 1 || float64(delivered) != failed()+1 {
		t.Errorf("delivered %d times, failed %v, applied %v; want applied once after every failed delivery", delivered, failed(), consumed)
	}
	t.Logf("delivered %d times during the outage", delivered-1)
}

// TestScanStatusHandlerTimeout: an operator event whose database write is
// stuck behind a lock fails at the handler timeout (300ms here; the
// statement timeout is 15s and the ack wait 60s), is redelivered, and is
// applied once the lock is gone.
func TestScanStatusHandlerTimeout(t *testing.T) {
	_, url := natstest.StartT(t)
	ctx := testCtx(t, 60*time.Second)
	_, js := natsConn(t, url)
	if _, err := eventsv1.EnsureStream(ctx, js); err != nil {
		t.Fatal(err)
	}
	srv := apitest.Start(t, apitest.WithNATS(url), apitest.WithEventTiming(events.Timing{
		RetryWait: 100 * time.Millisecond, HandlerTimeout: 300 * time.Millisecond, Redelivery: []time.Duration{50 * time.Millisecond}}))
	waitFor(t, func() bool { return srvSubscribed(ctx, js) })

	conn, err := pgx.Connect(ctx, srv.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	if _, err := tx.Exec(ctx, `LOCK TABLE scans IN EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}

	d := bomtest.Digest(6)
	start := time.Now()
	publish(ctx, t, js, eventsv1.SubjectJobDone, eventsv1.SourceOperator, eventsv1.TypeJobDone, "stuck-done", time.Now(),
		eventsv1.JobDone{Digest: d, Image: "demo@" + d, Namespace: "ns", Scanner: "s", Job: "job-1", Outcome: eventsv1.OutcomeSucceeded, Attempt: 1})
	failed := func() float64 {
		return metric(t, srv, "crowsnest_results_api_events_failed_total", `stage="consume",subject="crowsnest.job.done"`)
	}
	waitFor(t, func() bool { return failed() >= 2 })
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("two failed deliveries took %s: the handler timeout did not cut the stuck write", took)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return scanState(t, srv, d) == api.Done })
	delivered := deliveries(ctx, t, js, 1)
	consumed := metric(t, srv, "crowsnest_results_api_events_consumed_total", `subject="crowsnest.job.done"`)
	if consumed != 1 || float64(delivered) != failed()+1 {
		t.Errorf("delivered %d times, failed %v, applied %v; want applied once after every failed delivery", delivered, failed(), consumed)
	}
}
