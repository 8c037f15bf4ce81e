package service_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/nats-io/nats.go"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	"github.com/crowsnest-dev/crowsnest/test/support/natstest"

	"github.com/crowsnest-dev/crowsnest/results-api/api"
)

// A scan's Job runs in one namespace (the operator scans a digest once for
// the whole cluster); the namespace, the Scanner and Job there and the
// failure text name it. d3 runs in a and b and was scanned in b.
const (
	foreignScanner = "team-b-scanner"
	foreignJob     = "team-b-scan-d3"
	foreignMessage = "pull secret team-b-registry not found in namespace b"
)

// TestScanStatusNamesNoNamespaceOutsideTheReadersScope plays alice, who may
// read namespace a only, against scans that ran in b: /scans, the reports
// that carry a scan, the statistics and the WebSocket's scan.status frames
// may show her the scan of d3 (it runs in a) but never the namespace b,
// its Scanner, its Job or its failure text; the scan of d2 (only in b) not
// at all. A reader of the whole cluster sees everything.
func TestScanStatusNamesNoNamespaceOutsideTheReadersScope(t *testing.T) {
	c := newCluster(t)
	for _, ns := range []string{"users", "a", "b", "c"} {
		c.namespace(ns)
	}
	c.clusterRole("reports-reader", nil, "list")
	c.bind("a", "reports-reader", c.user("alice"))
	c.bind("", "reports-reader", c.user("admin"))
	_, natsURL := natstest.StartT(t)
	e := startReadsWith(t, c, natsURL)
	alice, admin := c.token("alice"), c.token("admin")

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	aliceWS, adminWS := e.dial(ctx, alice, false), e.dial(ctx, admin, false)
	defer aliceWS.CloseNow()
	defer adminWS.CloseNow()

	nc, err := nats.Connect(natsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	jobDone := func(digest, namespace, scanner, job, message string) {
		t.Helper()
		ev, err := eventsv1.New(eventsv1.SourceOperator, eventsv1.TypeJobDone, eventsv1.ID(eventsv1.TypeJobDone, job, "1"), digest, time.Now(),
			eventsv1.JobDone{Digest: digest, Image: "demo@" + digest, Namespace: namespace, Scanner: scanner, Job: job,
				Outcome: eventsv1.OutcomeFailed, Reason: "ImagePullFailed", Message: message, Attempt: 1})
		if err != nil {
			t.Fatal(err)
		}
		data, _ := json.Marshal(ev)
		if err := nc.Publish(eventsv1.SubjectJobDone, data); err != nil {
			t.Fatal(err)
		}
	}
	jobDone(d2, "b", foreignScanner, "team-b-scan-d2", foreignMessage)
	jobDone(d1, "a", "team-a-scanner", "team-a-scan-d1", "pull failed in a")
	jobDone(d3, "b", foreignScanner, foreignJob, foreignMessage)

	scans := func(token string) (map[string]api.ScanStatus, []byte) {
		t.Helper()
		code, b := e.get("/api/v1/scans", bearer(token)...)
		if code != http.StatusOK {
			t.Fatalf("scans: %d %s", code, b)
		}
		var l api.ScanList
		decode(t, b, &l)
		out := map[string]api.ScanStatus{}
		for _, s := range l.Items {
			out[s.Digest] = s
		}
		return out, b
	}
	waitUntil(t, func() bool { s, _ := scans(admin); return len(s) == 3 })

	t.Run("scans", func(t *testing.T) {
		all, _ := scans(admin)
		if s := all[d3]; s.Namespace != "b" || s.Scanner != foreignScanner || s.Job != foreignJob || s.Message == nil || s.Redacted != nil {
			t.Errorf("the cluster reader's scan of d3: %+v, want it whole", s)
		}
		got, body := scans(alice)
		noForeignName(t, "alice's /scans", body)
		if _, ok := got[d2]; ok || len(got) != 2 {
			t.Errorf("alice sees the scans of %v, want d1 and d3", short(keys(got)))
		}
		expectRedacted(t, "alice's scan of d3", got[d3])
		if s := got[d1]; s.Namespace != "a" || s.Job != "team-a-scan-d1" || s.Redacted != nil {
			t.Errorf("alice's scan of d1 (ran in a): %+v, want it whole", s)
		}
	})

	t.Run("reports and stats", func(t *testing.T) {
		for _, path := range []string{"/api/v1/reports/" + d3, "/api/v1/reports?limit=100", "/api/v1/stats"} {
			code, b := e.get(path, bearer(alice)...)
			if code != http.StatusOK {
				t.Fatalf("alice GET %s: %d %s", path, code, b)
			}
			noForeignName(t, "alice's "+path, b)
		}
		var r api.ReportDetail
		_, b := e.get("/api/v1/reports/"+d3, bearer(alice)...)
		decode(t, b, &r)
		if r.Scan == nil {
			t.Fatalf("alice's report of d3 has no scan: %s", b)
		}
		expectRedacted(t, "alice's report of d3", *r.Scan)
		if _, b := e.get("/api/v1/reports/"+d3, bearer(admin)...); !bytes.Contains(b, []byte(foreignJob)) {
			t.Errorf("the cluster reader's report of d3 lacks its scan's Job: %s", b)
		}
	})

	t.Run("websocket", func(t *testing.T) {
		frames := func(who string, ws *websocket.Conn) map[string][]byte {
			t.Helper()
			out := map[string][]byte{}
			for out[d3] == nil {
				_, msg, err := ws.Read(ctx)
				if err != nil {
					t.Fatalf("%s: read: %v", who, err)
				}
				var m struct {
					Type string
					Data struct{ Digest string }
				}
				decode(t, msg, &m)
				if m.Type == "scan.status" {
					out[m.Data.Digest] = msg
				}
			}
			return out
		}
		got := frames("alice", aliceWS)
		if _, ok := got[d2]; ok || got[d1] == nil {
			t.Errorf("alice received scan.status for %v, want d1 and d3", short(keys(got)))
		}
		for d, msg := range got {
			if d != d1 {
				noForeignName(t, "alice's scan.status frame of "+short([]string{d})[0], msg)
			}
		}
		frame := func(msg []byte) api.ScanStatus {
			var m struct{ Data api.ScanStatus } // fresh: absent fields stay zero
			decode(t, msg, &m)
			return m.Data
		}
		expectRedacted(t, "alice's scan.status frame of d3", frame(got[d3]))
		if s := frame(got[d1]); s.Namespace != "a" || s.Redacted != nil {
			t.Errorf("alice's frame of d1 (ran in a): %+v, want it whole", s)
		}
		all := frames("admin", adminWS)
		if s := frame(all[d3]); s.Namespace != "b" || s.Job != foreignJob || s.Redacted != nil {
			t.Errorf("the cluster reader's frame of d3: %+v, want it whole", s)
		}
	})
}

// noForeignName fails if body names namespace b, or its Scanner, Job or
// failure text.
func noForeignName(t *testing.T, what string, body []byte) {
	t.Helper()
	for _, s := range []string{`"namespace":"b"`, "team-b", foreignMessage} {
		if bytes.Contains(body, []byte(s)) {
			t.Errorf("%s carries %q: %s", what, s, body)
		}
	}
}

func expectRedacted(t *testing.T, what string, s api.ScanStatus) {
	t.Helper()
	if s.Namespace != "" || s.Scanner != "" || s.Job != "" || s.Message != nil || s.Redacted == nil || !*s.Redacted {
		t.Errorf("%s: %+v, want namespace, scanner, job and message redacted", what, s)
	}
	if s.Status != api.Failed || s.Reason == nil || *s.Reason != "ImagePullFailed" || s.Attempt != 1 {
		t.Errorf("%s: %+v, want the status, reason and attempt kept", what, s)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return sorted(out)
}

func waitUntil(t *testing.T, ok func() bool) {
	t.Helper()
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if ok() {
			return
		}
	}
	t.Fatal("condition not met within 30s")
}
