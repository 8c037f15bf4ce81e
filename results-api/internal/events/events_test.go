package events_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	"github.com/crowsnest-dev/crowsnest/test/support/natstest"
	"github.com/crowsnest-dev/crowsnest/test/support/pgtest"

	"github.com/crowsnest-dev/crowsnest/results-api/api"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/apitest"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/bomtest"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(runChild()) // a results-api process for crash_test.go
	}
	os.Exit(pgtest.Main(m))
}

func put(t *testing.T, srv *apitest.Server, digest string, body []byte) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPut, srv.URL+"/api/v1/reports/"+digest+"?image=demo@"+digest, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+srv.Token)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestEventsPublishConsumeFanOut(t *testing.T) {
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
	stream, err := js.Stream(ctx, eventsv1.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	// Wait until the API's fan-out subscription is live (NATS interest), or
	// the report.stored below would reach the stream but no WebSocket, and
	// until its durable scan-status consumer exists.
	waitFor(t, func() bool { return fanOutSubscribed(t, ns) && srvSubscribed(ctx, js) })

	d := bomtest.Digest(42)
	body := bomtest.BOM(bomtest.Vuln{ID: "CVE-2026-4242", Severity: "critical", Package: "x", Version: "1"})
	if code := put(t, srv, d, body); code != 201 {
		t.Fatalf("put: %d", code)
	}
	if code := put(t, srv, d, body); code != 200 {
		t.Fatalf("put again: %d", code)
	}

	// The browser gets report.stored over the WebSocket.
	_, msg, err := ws.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Type string
		ID   string
		Data api.ReportStored
	}
	if err := json.Unmarshal(msg, &m); err != nil || m.Type != "report.stored" || m.Data.Digest != d || m.Data.Counts.Critical != 1 || m.ID == "" {
		t.Fatalf("ws message %s (%v)", msg, err)
	}

	// Both uploads published the same deterministic id: one message stored.
	waitFor(t, func() bool {
		info, err := stream.Info(ctx, jetstream.WithSubjectFilter(eventsv1.SubjectReportStored))
		return err == nil && info.State.Subjects[eventsv1.SubjectReportStored] == 1
	})
	raw, err := stream.GetLastMsgForSubject(ctx, eventsv1.SubjectReportStored)
	if err != nil {
		t.Fatal(err)
	}
	if raw.Header.Get("Nats-Msg-Id") != m.ID {
		t.Errorf("Nats-Msg-Id %q, ws id %q", raw.Header.Get("Nats-Msg-Id"), m.ID)
	}

	// Operator events become scan status.
	publish := func(typ, subj string, p any) {
		ev, _ := eventsv1.New(eventsv1.SourceOperator, typ, eventsv1.ID(typ, "job-1", "1"), d, time.Now(), p)
		data, _ := json.Marshal(ev)
		if _, err := js.Publish(ctx, subj, data, jetstream.WithMsgID(ev.ID)); err != nil {
			t.Fatal(err)
		}
	}
	publish(eventsv1.TypeImageNeeded, eventsv1.SubjectImageNeeded, eventsv1.ImageNeeded{Digest: d, Image: "demo@" + d, Namespace: "ns", Scanner: "s", Job: "job-1", Attempt: 1})
	publish(eventsv1.TypeJobDone, eventsv1.SubjectJobDone, eventsv1.JobDone{Digest: d, Image: "demo@" + d, Namespace: "ns", Scanner: "s", Job: "job-1",
		Outcome: eventsv1.OutcomeFailed, Reason: "ImagePullFailed", Attempt: 1})
	waitFor(t, func() bool {
		resp, err := srv.Client().Get(srv.URL + "/api/v1/scans")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var l api.ScanList
		_ = json.NewDecoder(resp.Body).Decode(&l)
		return len(l.Items) == 1 && l.Items[0].Status == api.Failed && l.Items[0].Reason != nil && *l.Items[0].Reason == "ImagePullFailed"
	})
	// ...and scan.status frames on the WebSocket.
	for {
		_, msg, err := ws.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(msg), `"type":"scan.status"`) && strings.Contains(string(msg), `"failed"`) {
			break
		}
	}
}

// fanOutSubscribed reports whether the server has registered the API
// connection's plain subscription on crowsnest.> (the bus names its
// connection crowsnest-results-api).
func fanOutSubscribed(t *testing.T, ns *natstest.Server) bool {
	t.Helper()
	cz, err := ns.Connz(&server.ConnzOptions{Subscriptions: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cz.Conns {
		if c.Name == "crowsnest-results-api" && slices.Contains(c.Subs, eventsv1.StreamSubjects) {
			return true
		}
	}
	return false
}

func srvSubscribed(ctx context.Context, js jetstream.JetStream) bool {
	_, err := js.Consumer(ctx, eventsv1.StreamName, "results-api-scans")
	return err == nil
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 20s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
