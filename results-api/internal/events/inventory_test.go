package events_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	"github.com/crowsnest-dev/crowsnest/test/support"
	"github.com/crowsnest-dev/crowsnest/test/support/natstest"
	"github.com/crowsnest-dev/crowsnest/test/support/pgtest"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/apitest"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/bomtest"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/service"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
)

func snapshot(ns string, digests ...string) eventsv1.InventorySnapshot {
	s := eventsv1.InventorySnapshot{Namespace: ns, Workloads: []eventsv1.InventoryWorkload{}}
	for i, d := range digests {
		s.Workloads = append(s.Workloads, eventsv1.InventoryWorkload{Kind: eventsv1.KindDeployment, Name: "w" + string(rune('a'+i)),
			Containers: []eventsv1.InventoryContainer{{Name: "c", Image: "img", Digest: d, Pods: i + 1}}})
	}
	return s
}

// digestsOf returns the stored inventory of ns as digest → pods.
func digestsOf(t *testing.T, st *store.Store, ns string) map[string]int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rows, err := st.InventoryOf(ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, r := range rows {
		out[r.Digest] = r.Pods
	}
	return out
}

// TestInventoryConsumer runs the inventory consumer against a real
// JetStream and Postgres: a snapshot is applied, a later one replaces it,
// an empty one clears the namespace, an older one and a repeated one change
// nothing, and an invalid one is terminated, counted and not applied. Each
// step is followed by a marker snapshot of another namespace, so that the
// test waits for the consumer to pass the step (it consumes in order)
// instead of sleeping.
func TestInventoryConsumer(t *testing.T) {
	_, url := natstest.StartT(t)
	createStream(t, url)
	srv := apitest.Start(t, apitest.WithNATS(url))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st, err := store.Open(ctx, srv.DatabaseURL, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	waitFor(t, func() bool {
		_, err := js.Consumer(ctx, eventsv1.StreamName, "results-api-inventory")
		return err == nil
	})
	terminated, err := nc.SubscribeSync("$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED." + eventsv1.StreamName + ".results-api-inventory")
	if err != nil {
		t.Fatal(err)
	}
	d1, d2, d3 := bomtest.Digest(1), bomtest.Digest(2), bomtest.Digest(3)
	base := time.Now().UTC().Truncate(time.Millisecond).Add(-time.Hour)
	marks := 0
	// step publishes one snapshot of a, then a marker snapshot of
	// namespace "mark" and waits until the marker is applied.
	step := func(id string, at time.Time, s eventsv1.InventorySnapshot) {
		t.Helper()
		publish(ctx, t, js, eventsv1.SubjectInventorySnapshot, eventsv1.SourceOperator, eventsv1.TypeInventorySnapshot, id, at, s)
		marks++
		publish(ctx, t, js, eventsv1.SubjectInventorySnapshot, eventsv1.SourceOperator, eventsv1.TypeInventorySnapshot,
			id+"-mark", base.Add(time.Duration(marks)*time.Second), snapshot("mark", bomtest.Digest(100+marks)))
		want := bomtest.Digest(100 + marks)
		waitFor(t, func() bool { _, ok := digestsOf(t, st, "mark")[want]; return ok })
	}
	same := func(got, want map[string]int) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("inventory %v, want %v", got, want)
		}
		for k, v := range want {
			if got[k] != v {
				t.Fatalf("inventory %v, want %v", got, want)
			}
		}
	}

	step("s1", base.Add(time.Minute), snapshot("a", d1, d2))
	same(digestsOf(t, st, "a"), map[string]int{d1: 1, d2: 2})

	step("s2", base.Add(2*time.Minute), snapshot("a", d3))
	same(digestsOf(t, st, "a"), map[string]int{d3: 1})
	if r, err := st.Runtime(ctx, d1); err != nil || r.NotRunningSince == nil || !r.NotRunningSince.Equal(base.Add(2*time.Minute)) {
		t.Fatalf("digest 1 after it stopped: %+v, %v", r, err)
	}

	// Out of order: older than s2.
	step("s-old", base.Add(90*time.Second), snapshot("a", d1))
	same(digestsOf(t, st, "a"), map[string]int{d3: 1})

	// The same event again (a redelivery: same id and time, another
	// Nats-Msg-Id so that the stream keeps it).
	ev, err := eventsv1.New(eventsv1.SourceOperator, eventsv1.TypeInventorySnapshot, "s2", "", base.Add(2*time.Minute), snapshot("a", d3))
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(ev)
	if _, err := js.Publish(ctx, eventsv1.SubjectInventorySnapshot, data, jetstream.WithMsgID("s2-again")); err != nil {
		t.Fatal(err)
	}
	step("after-again", base.Add(2*time.Minute), snapshot("a", d3))
	same(digestsOf(t, st, "a"), map[string]int{d3: 1})

	// Invalid: a digest that is not one.
	bad := snapshot("a", d1)
	bad.Workloads[0].Containers[0].Digest = "sha256:nothex"
	step("s-bad", base.Add(3*time.Minute), bad)
	if _, err := terminated.NextMsg(10 * time.Second); err != nil {
		t.Fatalf("no termination advisory for the invalid snapshot: %v", err)
	}
	same(digestsOf(t, st, "a"), map[string]int{d3: 1})
	want := map[string]float64{`reason="payload",subject="crowsnest.inventory.snapshot"`: 1}
	if got := invalidCounts(t, srv); !equalCounts(got, want) {
		t.Errorf("crowsnest_events_invalid_total %v, want %v", got, want)
	}

	// Empty: nothing runs in a any more.
	step("s-empty", base.Add(4*time.Minute), snapshot("a"))
	same(digestsOf(t, st, "a"), map[string]int{})
	if r, err := st.Runtime(ctx, d3); err != nil || r.NotRunningSince == nil || !r.NotRunningSince.Equal(base.Add(4*time.Minute)) {
		t.Fatalf("digest 3 after the empty snapshot: %+v, %v", r, err)
	}

	// Every delivery acknowledged or terminated, none redelivered.
	c, err := js.Consumer(ctx, eventsv1.StreamName, "results-api-inventory")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		info, err := c.Info(ctx)
		return err == nil && info.NumAckPending == 0 && info.NumPending == 0
	})
	info, _ := c.Info(ctx)
	if info.NumRedelivered != 0 || info.Delivered.Consumer != 13 {
		t.Errorf("consumer delivered %d, redelivered %d; want 13, 0", info.Delivered.Consumer, info.NumRedelivered)
	}
}

// TestInventoryConsumerWithNATSPermissions runs the consumer as the
// results-api NATS user of the shared contract (eventsv1.Permissions) and
// publishes as the operator user: the permissions let results-api create
// and read its inventory consumer, and the snapshot is applied.
func TestInventoryConsumerWithNATSPermissions(t *testing.T) {
	pw := map[eventsv1.User]string{eventsv1.UserResultsAPI: "results-api-password", eventsv1.UserOperator: "operator-password"}
	_, url := natstest.StartAuthT(t, pw)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	logs := &support.Buffer{}
	svc, err := service.New(ctx, service.Config{DatabaseURL: pgtest.NewDatabase(t), NATSURL: url, Logger: slog.New(slog.NewJSONHandler(logs, nil)),
		NATSConnect: []nats.Option{nats.UserInfo(string(eventsv1.UserResultsAPI), pw[eventsv1.UserResultsAPI])}})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	nc, err := nats.Connect(url, nats.UserInfo(string(eventsv1.UserOperator), pw[eventsv1.UserOperator]))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	d := bomtest.Digest(9)
	defer func() {
		if t.Failed() {
			t.Log(logs.String())
		}
	}()
	var perr error
	defer func() {
		if t.Failed() {
			t.Log("last publish error:", perr)
		}
	}()
	waitFor(t, func() bool {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_, perr = js.Publish(pctx, eventsv1.SubjectInventorySnapshot, mustEvent(t, "perm-1", snapshot("shop", d)), jetstream.WithMsgID("perm-1"))
		return perr == nil // until results-api has created the stream
	})
	waitFor(t, func() bool { _, ok := digestsOf(t, svc.Store, "shop")[d]; return ok })
}

func mustEvent(t *testing.T, id string, s eventsv1.InventorySnapshot) []byte {
	t.Helper()
	ev, err := eventsv1.New(eventsv1.SourceOperator, eventsv1.TypeInventorySnapshot, id, "", time.Now(), s)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
