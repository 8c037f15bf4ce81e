package events_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/apitest"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/bomtest"
)

// natsConn connects the test's own client, one that reconnects quickly
// after the server restarts.
func natsConn(t *testing.T, url string) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}

// createStream creates the stream before a test starts the API, which then
// only reads it back. nats-server v2.15.2 has a data race (the race
// detector sees it in the embedded server) between a stream update and a
// consumer creation running at once: a test updating the stream while the
// API sets up its consumer would trip it.
func createStream(t *testing.T, url string) {
	t.Helper()
	nc, js := natsConn(t, url)
	defer nc.Close()
	if _, err := eventsv1.EnsureStream(testCtx(t, 10*time.Second), js); err != nil {
		t.Fatal(err)
	}
}

func testCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// metric scrapes one sample from srv's /metrics: name with exactly the
// given label set ("" for none, else `a="x",b="y"` in the exposition's
// order). A sample not exported reads as 0.
func metric(t *testing.T, srv *apitest.Server, name, labels string) float64 {
	t.Helper()
	resp, err := srv.Client().Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	want := name
	if labels != "" {
		want += "{" + labels + "}"
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), want+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("metric line %q: %v", sc.Text(), err)
			}
			return f
		}
	}
	return 0
}

// outboxRow is a row of event_outbox as the test reads it with SQL.
type outboxRow struct {
	ID        int64
	Subject   string
	Digest    string
	EventID   string
	Payload   []byte
	Attempts  int
	LastError string
}

func outboxRows(t *testing.T, dsn string) []outboxRow {
	t.Helper()
	ctx := testCtx(t, 10*time.Second)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(ctx, `SELECT id, subject, digest, event_id, convert_to(payload::text, 'UTF8'), attempts, last_error FROM event_outbox ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []outboxRow
	for rows.Next() {
		var r outboxRow
		if err := rows.Scan(&r.ID, &r.Subject, &r.Digest, &r.EventID, &r.Payload, &r.Attempts, &r.LastError); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// reportRows keeps the report.stored and report.deleted events of an
// outbox (each report also writes its findings.changed).
func reportRows(rows []outboxRow) []outboxRow {
	var out []outboxRow
	for _, r := range rows {
		if strings.HasPrefix(r.Subject, "crowsnest.report.") {
			out = append(out, r)
		}
	}
	return out
}

// adminExec runs SQL as the test server's superuser, on its postgres
// database (beside the test's own database, named in dsn).
func adminExec(t *testing.T, dsn, sql string, args ...any) {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/postgres"
	ctx := testCtx(t, 10*time.Second)
	conn, err := pgx.Connect(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func dbName(t *testing.T, dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimPrefix(u.Path, "/")
}

// streamEvent is one message of the stream, in stream order.
type streamEvent struct {
	Seq     uint64
	Subject string
	MsgID   string
	Digest  string
	Data    []byte
}

// streamEvents reads every message of the stream whose subject starts
// with prefix.
func streamEvents(ctx context.Context, t *testing.T, js jetstream.JetStream, prefix string) []streamEvent {
	t.Helper()
	s, err := js.Stream(ctx, eventsv1.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []streamEvent
	for seq := info.State.FirstSeq; info.State.Msgs > 0 && seq <= info.State.LastSeq; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			t.Fatalf("stream message %d: %v", seq, err)
		}
		if !strings.HasPrefix(m.Subject, prefix) {
			continue
		}
		var ev eventsv1.Event
		if err := json.Unmarshal(m.Data, &ev); err != nil {
			t.Fatalf("stream message %d: %v", seq, err)
		}
		out = append(out, streamEvent{Seq: seq, Subject: m.Subject, MsgID: m.Header.Get("Nats-Msg-Id"), Digest: ev.Subject, Data: m.Data})
	}
	return out
}

// bomV is a constructed BOM whose counts (and so its report.stored id)
// depend on v.
func bomV(v int) []byte {
	vulns := []bomtest.Vuln{{ID: "CVE-2026-0001", Severity: "critical", Package: "x", Version: "1"}}
	for i := 1; i < v; i++ {
		vulns = append(vulns, bomtest.Vuln{ID: "CVE-2026-100" + strconv.Itoa(i), Severity: "high", Package: "y", Version: "1"})
	}
	return bomtest.BOM(vulns...)
}

func del(t *testing.T, srv *apitest.Server, digest string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, srv.URL+"/api/v1/reports/"+digest, nil)
	req.Header.Set("Authorization", "Bearer "+srv.Token)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
