package events_test

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/test/support"

	"github.com/coder/websocket"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	"github.com/crowsnest-dev/crowsnest/test/support/natstest"

	"github.com/crowsnest-dev/crowsnest/results-api/api"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/apitest"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/bomtest"
)

// marker is in every forged payload: it must appear in no log line.
const marker = "forged-payload-marker"

// TestForgedOperatorEventsAreTerminated plays an attacker who can publish on
// crowsnest.job.done (past the bus's permissions, or an operator with a
// broken clock): a job.done dated 9999-01-01 and one from the wrong source
// would, if applied, pin the digest's scan status at "done" forever. Neither
// is applied, broadcast or redelivered; each is counted and logged once; the
// valid job.done after them is applied.
func TestForgedOperatorEventsAreTerminated(t *testing.T) {
	ns, url := natstest.StartT(t)
	createStream(t, url)
	logs := &support.Buffer{}
	srv := apitest.Start(t, apitest.WithNATS(url), apitest.WithLogger(slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, strings.Replace(srv.URL, "http", "ws", 1)+"/api/v1/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	waitFor(t, func() bool { return fanOutSubscribed(t, ns) && srvSubscribed(ctx, js) })
	terminated, err := nc.SubscribeSync("$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED." + eventsv1.StreamName + ".results-api-scans")
	if err != nil {
		t.Fatal(err)
	}

	d := bomtest.Digest(7)
	done := func(outcome eventsv1.Outcome, reason string) eventsv1.JobDone {
		return eventsv1.JobDone{Digest: d, Image: "demo@" + d, Namespace: "ns", Scanner: "s", Job: "job-1", Outcome: outcome, Reason: reason, Attempt: 1}
	}
	publish(ctx, t, js, eventsv1.SubjectImageNeeded, eventsv1.SourceOperator, eventsv1.TypeImageNeeded, "needed", time.Now(),
		eventsv1.ImageNeeded{Digest: d, Image: "demo@" + d, Namespace: "ns", Scanner: "s", Job: "job-1", Reason: eventsv1.NeedNew, Attempt: 1})
	waitFor(t, func() bool { return scanState(t, srv, d) == api.Scanning })

	forged := done(eventsv1.OutcomeSucceeded, "")
	forged.Message = marker
	publish(ctx, t, js, eventsv1.SubjectJobDone, eventsv1.SourceOperator, eventsv1.TypeJobDone, "forged-future",
		time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), forged)
	publish(ctx, t, js, eventsv1.SubjectJobDone, eventsv1.SourceResultsAPI, eventsv1.TypeJobDone, "forged-source", time.Now(), forged)
	for i := range 2 {
		if _, err := terminated.NextMsg(10 * time.Second); err != nil {
			t.Fatalf("termination advisory %d: %v", i+1, err)
		}
	}
	if s := scanState(t, srv, d); s != api.Scanning {
		t.Fatalf("after the forged events the scan is %q, want it unchanged (scanning)", s)
	}

	validAt := time.Now().UTC().Truncate(time.Millisecond)
	publish(ctx, t, js, eventsv1.SubjectJobDone, eventsv1.SourceOperator, eventsv1.TypeJobDone, "valid", validAt, done(eventsv1.OutcomeFailed, "ImagePullFailed"))
	waitFor(t, func() bool { return scanState(t, srv, d) == api.Failed })
	if st := scan(t, srv, d); st.Reason == nil || *st.Reason != "ImagePullFailed" || !st.UpdatedAt.Equal(validAt) {
		t.Errorf("scan status %+v, want the valid job.done's (failed, ImagePullFailed, %s)", st, validAt)
	}

	// The browser saw image.needed and the valid job.done, nothing between.
	var frames []string
	for len(frames) < 2 {
		_, msg, err := ws.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var m struct {
			Type string
			Data api.ScanStatus
		}
		if err := json.Unmarshal(msg, &m); err != nil {
			t.Fatal(err)
		}
		if m.Type == "scan.status" {
			frames = append(frames, string(m.Data.Status))
		}
	}
	if frames[0] != string(api.Scanning) || frames[1] != string(api.Failed) {
		t.Errorf("scan.status frames %v, want [scanning failed]", frames)
	}

	// Counted once each, by the broken rule.
	want := map[string]float64{`reason="time",subject="crowsnest.job.done"`: 1, `reason="source",subject="crowsnest.job.done"`: 1}
	if got := invalidCounts(t, srv); !equalCounts(got, want) {
		t.Errorf("crowsnest_events_invalid_total %v, want %v", got, want)
	}

	// Terminated, not redelivered: four deliveries for four messages, none
	// waiting for an ack, and no third termination.
	c, err := js.Consumer(ctx, eventsv1.StreamName, "results-api-scans")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		info, err := c.Info(ctx)
		return err == nil && info.AckFloor.Consumer == 4
	})
	info, err := c.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Delivered.Consumer != 4 || info.Delivered.Stream != 4 || info.NumRedelivered != 0 || info.NumAckPending != 0 || info.NumPending != 0 {
		t.Errorf("consumer delivered %d (stream %d), redelivered %d, ack pending %d, pending %d; want 4, 4, 0, 0, 0",
			info.Delivered.Consumer, info.Delivered.Stream, info.NumRedelivered, info.NumAckPending, info.NumPending)
	}
	if m, err := terminated.NextMsg(200 * time.Millisecond); err == nil {
		t.Errorf("a third termination: %s", m.Data)
	}

	// One warning per forged event, with subject, id and reason, and no
	// payload in any line.
	warned := map[string]string{}
	for _, l := range logs.JSONLines(t) {
		if l["msg"] == "drop invalid event" {
			if l["level"] != "WARN" || l["subject"] != eventsv1.SubjectJobDone {
				t.Errorf("log line %v", l)
			}
			warned[l["id"].(string)] = l["reason"].(string)
		}
	}
	if len(warned) != 2 || warned["forged-future"] != eventsv1.ReasonTime || warned["forged-source"] != eventsv1.ReasonSource ||
		strings.Count(logs.String(), `"msg":"drop invalid event"`) != 2 {
		t.Errorf("warnings %v (%d lines), want forged-future: time, forged-source: source, once each", warned, strings.Count(logs.String(), `"msg":"drop invalid event"`))
	}
	if strings.Count(logs.String(), marker) != 0 {
		t.Error("a log line holds the payload")
	}
}

// TestForgedReportEventIsNotBroadcast covers the fan-out's own subjects: a
// report.deleted from the wrong source reaches no browser and is counted;
// the valid one after it is forwarded.
func TestForgedReportEventIsNotBroadcast(t *testing.T) {
	ns, url := natstest.StartT(t)
	createStream(t, url)
	srv := apitest.Start(t, apitest.WithNATS(url))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, strings.Replace(srv.URL, "http", "ws", 1)+"/api/v1/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	waitFor(t, func() bool { return fanOutSubscribed(t, ns) })

	forged, valid := bomtest.Digest(8), bomtest.Digest(9)
	publish(ctx, t, js, eventsv1.SubjectReportDeleted, eventsv1.SourceOperator, eventsv1.TypeReportDeleted, "forged", time.Now(), eventsv1.ReportDeleted{Digest: forged})
	publish(ctx, t, js, eventsv1.SubjectReportDeleted, eventsv1.SourceResultsAPI, eventsv1.TypeReportDeleted, "valid", time.Now(), eventsv1.ReportDeleted{Digest: valid})
	_, msg, err := ws.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Type string
		ID   string
		Data api.ReportDeleted
	}
	if err := json.Unmarshal(msg, &m); err != nil || m.Type != "report.deleted" || m.ID != "valid" || m.Data.Digest != valid {
		t.Fatalf("first frame %s (%v), want the valid report.deleted", msg, err)
	}
	want := map[string]float64{`reason="source",subject="crowsnest.report.deleted"`: 1}
	if got := invalidCounts(t, srv); !equalCounts(got, want) {
		t.Errorf("crowsnest_events_invalid_total %v, want %v", got, want)
	}
}

func publish(ctx context.Context, t *testing.T, js jetstream.JetStream, subject, source, typ, id string, at time.Time, payload any) {
	t.Helper()
	ev, err := eventsv1.New(source, typ, id, "", at, payload)
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, subject, data, jetstream.WithMsgID(id)); err != nil {
		t.Fatal(err)
	}
}

func scan(t *testing.T, srv *apitest.Server, digest string) api.ScanStatus {
	t.Helper()
	resp, err := srv.Client().Get(srv.URL + "/api/v1/scans")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var l api.ScanList
	if err := json.NewDecoder(resp.Body).Decode(&l); err != nil {
		t.Fatal(err)
	}
	for _, s := range l.Items {
		if s.Digest == digest {
			return s
		}
	}
	return api.ScanStatus{}
}

func scanState(t *testing.T, srv *apitest.Server, digest string) api.ScanState {
	t.Helper()
	return scan(t, srv, digest).Status
}

// invalidCounts scrapes /metrics for crowsnest_events_invalid_total, keyed
// by its label set.
func invalidCounts(t *testing.T, srv *apitest.Server) map[string]float64 {
	t.Helper()
	resp, err := srv.Client().Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "crowsnest_events_invalid_total{")
		if !ok {
			continue
		}
		labels, value, _ := strings.Cut(line, "} ")
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", sc.Text(), err)
		}
		got[labels] = v
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return got
}

func equalCounts(a, b map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
