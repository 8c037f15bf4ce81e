package events_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/nats-io/nats.go/jetstream"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	"github.com/crowsnest-dev/crowsnest/test/support/natstest"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/apitest"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/bomtest"
)

func changedEvents(ctx context.Context, t *testing.T, js jetstream.JetStream, digest string) ([]eventsv1.Event, []string) {
	t.Helper()
	var evs []eventsv1.Event
	var msgIDs []string
	for _, m := range streamEvents(ctx, t, js, eventsv1.SubjectFindingsChanged) {
		if m.Digest != digest {
			continue
		}
		var ev eventsv1.Event
		if err := json.Unmarshal(m.Data, &ev); err != nil {
			t.Fatal(err)
		}
		evs, msgIDs = append(evs, ev), append(msgIDs, m.MsgID)
	}
	return evs, msgIDs
}

func storedCount(ctx context.Context, t *testing.T, js jetstream.JetStream, digest string) int {
	n := 0
	for _, m := range streamEvents(ctx, t, js, eventsv1.SubjectReportStored) {
		if m.Digest == digest {
			n++
		}
	}
	return n
}

// TestFindingsChangedPublished: a baseline, then a changed report, then a
// report with the same finding keys: exactly two findings.changed events
// reach the stream (counts only for the baseline, the exact new and
// resolved findings for the change) and the WebSocket; a change of more
// than 100 findings lists 100 and says where the rest are.
func TestFindingsChangedPublished(t *testing.T) {
	ns, url := natstest.StartT(t)
	createStream(t, url)
	srv := apitest.Start(t, apitest.WithNATS(url))
	ctx := testCtx(t, 60*time.Second)
	ws, _, err := websocket.Dial(ctx, strings.Replace(srv.URL, "http", "ws", 1)+"/api/v1/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	_, js := natsConn(t, url)
	waitFor(t, func() bool { return fanOutSubscribed(t, ns) })

	d := bomtest.Digest(7)
	v := func(id, sev string) bomtest.Vuln {
		return bomtest.Vuln{ID: id, Severity: sev, Package: "pkg-" + id, Version: "1", Fix: "2"}
	}
	for i, bom := range [][]byte{
		bomtest.BOM(v("CVE-1", "critical"), v("CVE-2", "high"), v("CVE-3", "low")),
		bomtest.BOM(v("CVE-1", "critical"), v("CVE-4", "high"), v("CVE-5", "high"), v("CVE-6", "medium")),
		bomtest.BOM(v("CVE-1", "high"), v("CVE-4", "high"), v("CVE-5", "high"), v("CVE-6", "medium")), // same keys
	} {
		if code := put(t, srv, d, bom); code != 201 && code != 200 {
			t.Fatalf("put %d: %d", i, code)
		}
	}
	waitFor(t, func() bool { return storedCount(ctx, t, js, d) == 3 })
	evs, msgIDs := changedEvents(ctx, t, js, d)
	if len(evs) != 2 {
		t.Fatalf("%d findings.changed events, want 2 (baseline, change)", len(evs))
	}
	var base, change eventsv1.FindingsChanged
	if err := evs[0].Decode(&base); err != nil {
		t.Fatal(err)
	}
	if err := evs[1].Decode(&change); err != nil {
		t.Fatal(err)
	}
	if !base.Baseline || base.NewCounts != (eventsv1.SeverityCounts{Critical: 1, High: 1, Low: 1}) || base.New != nil || base.Cause != eventsv1.CauseScan {
		t.Errorf("baseline %+v", base)
	}
	if change.Baseline || change.Cause != eventsv1.CauseRescan || change.Digest != d || change.Image != "demo@"+d ||
		change.NewCounts != (eventsv1.SeverityCounts{High: 2, Medium: 1}) || change.ResolvedCounts != (eventsv1.SeverityCounts{High: 1, Low: 1}) ||
		len(change.New) != 3 || len(change.Resolved) != 2 || change.Truncated || change.ChangesPath != "" {
		t.Errorf("change %+v", change)
	}
	if change.New[0].ID != "CVE-4" || change.New[0].Severity != "high" || change.New[0].Package.Name != "pkg-CVE-4" ||
		len(change.New[0].FixedIn) != 1 || change.Resolved[0].ID != "CVE-2" {
		t.Errorf("change lists %+v / %+v", change.New, change.Resolved)
	}
	for i, ev := range evs {
		if ev.Type != eventsv1.TypeFindingsChanged || ev.Source != eventsv1.SourceResultsAPI || msgIDs[i] != ev.ID ||
			ev.ID != eventsv1.ID(eventsv1.TypeFindingsChanged, d, fmt.Sprint([]int64{base.ChangeID, change.ChangeID}[i])) {
			t.Errorf("event %d: type %s source %s id %s msg id %s", i, ev.Type, ev.Source, ev.ID, msgIDs[i])
		}
	}

	// The WebSocket gets both, as findings.changed frames.
	var frames int
	for frames < 2 {
		_, msg, err := ws.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var m struct {
			Type string
			ID   string
			Data eventsv1.FindingsChanged
		}
		if err := json.Unmarshal(msg, &m); err != nil {
			t.Fatal(err)
		}
		if m.Type != "findings.changed" {
			continue
		}
		if m.ID != evs[frames].ID || m.Data.ChangeID != []int64{base.ChangeID, change.ChangeID}[frames] {
			t.Errorf("frame %d: %s", frames, msg)
		}
		frames++
	}

	// More than 100 new findings: 100 listed, truncated, with the path.
	big := bomtest.Digest(8)
	if code := put(t, srv, big, bomtest.BOM()); code != 201 {
		t.Fatalf("put: %d", code)
	}
	var many []bomtest.Vuln
	for i := range 150 {
		many = append(many, v(fmt.Sprintf("CVE-2026-%04d", i), "medium"))
	}
	if code := put(t, srv, big, bomtest.BOM(many...)); code != 200 {
		t.Fatalf("put: %d", code)
	}
	waitFor(t, func() bool { evs, _ := changedEvents(ctx, t, js, big); return len(evs) == 2 })
	evs, _ = changedEvents(ctx, t, js, big)
	var trunc eventsv1.FindingsChanged
	if err := evs[1].Decode(&trunc); err != nil {
		t.Fatal(err)
	}
	if !trunc.Truncated || len(trunc.New) != eventsv1.MaxChangedFindings || trunc.NewCounts.Medium != 150 ||
		trunc.ChangesPath != "/api/v1/reports/"+big+"/changes" {
		t.Errorf("truncated change: truncated %v, %d listed, counts %+v, path %q", trunc.Truncated, len(trunc.New), trunc.NewCounts, trunc.ChangesPath)
	}
}
