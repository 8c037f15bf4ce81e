package main

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	"github.com/crowsnest-dev/crowsnest/notifier/internal/receiver"
)

func lastEvent(t *testing.T, rc *endpoint) receiver.CloudEvent {
	t.Helper()
	var ev receiver.CloudEvent
	if err := json.Unmarshal(rc.body(rc.accepted()-1), &ev); err != nil {
		t.Fatal(err)
	}
	return ev
}

// TestRunningScanFailuresAndRestart: a digest scanned before it runs says
// nothing; the workload that starts running it is notified with the
// baseline's critical count; after a restart the inventory is still known
// (a new critical in it is notified); three failed scans in a namespace
// are one message; an event from the wrong producer is dropped.
func TestRunningScanFailuresAndRestart(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	cfg := `
receivers:
- {name: hook, webhook: {url: "` + rc.URL + `"}}
routes:
- {name: all, receiver: hook, groupWait: 10ms}
scanFailures: {threshold: 3, window: 1h}
`
	n := e.start(e.options(cfg))
	d := digest('d')
	base := eventsv1.FindingsChanged{ChangeID: 1, Digest: d, Image: "registry.example/app@" + d, Cause: eventsv1.CauseScan,
		ChangedAt: time.Now(), Baseline: true, NewCounts: eventsv1.SeverityCounts{Critical: 2, High: 5}}
	id := eventsv1.ID(eventsv1.TypeFindingsChanged, d, "1")
	e.publish(e.api, eventsv1.SourceResultsAPI, eventsv1.TypeFindingsChanged, id, id, base)
	waitIdle(t, e, n, 1)
	if rc.accepted() != 0 {
		t.Fatalf("a digest that runs nowhere notified %d times", rc.accepted())
	}

	e.inventory("a", d, nil)
	waitIdle(t, e, n, 2)
	if rc.accepted() != 1 {
		t.Fatalf("newly running: %d messages, want 1", rc.accepted())
	}
	it := lastEvent(t, rc).Data.Items[0]
	if it.Kind != "running" || it.Counts["critical"] != 2 || it.Workloads[0] != "Deployment/web" || it.Image != base.Image {
		t.Fatalf("running item %+v", it)
	}

	if err := n.stop(); err != nil {
		t.Fatal(err)
	}
	n = e.start(e.options(cfg))
	e.findings(d, 2, "CVE-2026-0600")
	waitIdle(t, e, n, 1)
	if rc.accepted() != 2 || lastEvent(t, rc).Data.Items[0].Findings[0].ID != "CVE-2026-0600" {
		t.Fatalf("after the restart: %d messages", rc.accepted())
	}

	for i := range 3 {
		jd := eventsv1.JobDone{Digest: digest('e'), Image: "x@" + digest('e'), Namespace: "a", Scanner: "s", Job: fmt.Sprint("job-", i),
			Outcome: eventsv1.OutcomeFailed, Reason: "ImagePullFailed", Attempt: i + 1}
		jid := eventsv1.ID(eventsv1.TypeJobDone, jd.Job)
		e.publish(e.op, eventsv1.SourceOperator, eventsv1.TypeJobDone, jid, jid, jd)
	}
	waitIdle(t, e, n, 4)
	if rc.accepted() != 3 {
		t.Fatalf("scan failures: %d messages in all, want 3", rc.accepted())
	}
	if it := lastEvent(t, rc).Data.Items[0]; it.Kind != "scanFailures" || it.Failures != 3 || it.Reason != "ImagePullFailed" {
		t.Fatalf("scan failure item %+v", it)
	}

	// results-api may publish on findings.changed, but an event claiming
	// another source is not the contract's: dropped, counted, not sent.
	forged := eventsv1.FindingsChanged{ChangeID: 9, Digest: d, Image: base.Image, Cause: eventsv1.CauseRescan, ChangedAt: time.Now(),
		New: []eventsv1.ChangedFinding{{ID: "CVE-FORGED", Severity: "critical"}}, NewCounts: eventsv1.SeverityCounts{Critical: 1}}
	e.publish(e.api, eventsv1.SourceOperator, eventsv1.TypeFindingsChanged, "forged-1", "forged-1", forged)
	eventually(t, "the forged event dropped", func() bool {
		return n.count("crowsnest_notifier_events_total", "result", "invalid") == 1
	})
	waitIdle(t, e, n, 5)
	if rc.accepted() != 3 {
		t.Fatalf("the forged event was sent: %d messages", rc.accepted())
	}
}
