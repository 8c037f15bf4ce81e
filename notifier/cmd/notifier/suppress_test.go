package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	"github.com/crowsnest-dev/crowsnest/notifier/internal/receiver"
)

// itemFindings renders a message's items as namespace/kind → CVE ids.
func itemFindings(items []receiver.NotificationItem) map[string][]string {
	out := map[string][]string{}
	for _, it := range items {
		k := it.Namespace + "/" + it.Kind
		for _, f := range it.Findings {
			out[k] = append(out[k], f.ID)
		}
	}
	return out
}

// TestSuppressedFindingsLeftOutPerNamespace: a digest runs in a and b;
// results-api marked CVE X suppressed in a (team a's exception). The
// notifier tells b about X and V, and a about V only; a change whose only
// new finding is suppressed in a tells b alone, and a finding suppressed
// everywhere (a cluster exception) nobody. A workload newly running the
// digest in a is told of the criticals not suppressed in a. The metric
// counts each finding left out of a new or kev item.
func TestSuppressedFindingsLeftOutPerNamespace(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	n := e.start(e.options(`
receivers:
- {name: hook, webhook: {url: "` + rc.URL + `"}}
routes:
- {name: all, receiver: hook, minSeverity: high, groupWait: 10ms}
`))
	d := digest('f')
	e.inventory("a", d, nil)
	e.inventory("b", d, nil)
	pkg := eventsv1.ChangedPackage{Name: "openssl", Version: "3.0.1", Type: "apk"}
	change := func(id int64, p eventsv1.FindingsChanged) {
		p.ChangeID, p.Digest, p.Image, p.Cause, p.ChangedAt = id, d, "registry.example/demo/app@"+d, eventsv1.CauseRematch, time.Now()
		eid := eventsv1.ID(eventsv1.TypeFindingsChanged, d, fmt.Sprint(id))
		e.publish(e.api, eventsv1.SourceResultsAPI, eventsv1.TypeFindingsChanged, eid, eid, p)
	}

	change(1, eventsv1.FindingsChanged{NewCounts: eventsv1.SeverityCounts{Critical: 2}, New: []eventsv1.ChangedFinding{
		{ID: "CVE-2026-0001", Severity: "critical", Package: pkg, SuppressedIn: []string{"a"}},
		{ID: "CVE-2026-0002", Severity: "critical", Package: pkg}}})
	waitIdle(t, e, n, 3)
	if rc.accepted() != 1 {
		t.Fatalf("%d messages, want 1 (handled %v, invalid %v, dropped %v)", rc.accepted(), n.count("crowsnest_notifier_events_total", "result", "handled"), n.count("crowsnest_notifier_events_total", "result", "invalid"), n.count("crowsnest_notifier_dropped_total"))
	}
	got := itemFindings(lastEvent(t, rc).Data.Items)
	if !slices.Equal(got["a/new"], []string{"CVE-2026-0002"}) || !slices.Equal(got["b/new"], []string{"CVE-2026-0001", "CVE-2026-0002"}) || len(got) != 2 {
		t.Fatalf("items %v, want a told of CVE-2026-0002 only and b of both", got)
	}

	change(2, eventsv1.FindingsChanged{NewCounts: eventsv1.SeverityCounts{High: 1}, KEVAddedCount: 1,
		New:      []eventsv1.ChangedFinding{{ID: "CVE-2026-0003", Severity: "high", Package: pkg, SuppressedIn: []string{"a"}}},
		KEVAdded: []eventsv1.ChangedFinding{{ID: "CVE-2026-0004", Severity: "high", Package: pkg, KEV: true, SuppressedEverywhere: true}}})
	waitIdle(t, e, n, 4)
	if rc.accepted() != 2 {
		t.Fatalf("%d messages, want 2", rc.accepted())
	}
	if got := itemFindings(lastEvent(t, rc).Data.Items); !slices.Equal(got["b/new"], []string{"CVE-2026-0003"}) || len(got) != 1 {
		t.Fatalf("items %v, want b alone told of CVE-2026-0003", got)
	}
	// A second workload starts running d in a, and one in b: each is told
	// of the criticals not suppressed in its namespace (a: CVE-2026-0002;
	// b: both).
	for _, ns := range []string{"a", "b"} {
		s := eventsv1.InventorySnapshot{Namespace: ns, Workloads: []eventsv1.InventoryWorkload{
			{Kind: eventsv1.KindDeployment, Name: "web", Containers: []eventsv1.InventoryContainer{{Name: "app", Image: "demo/app:1", Digest: d, Pods: 2}}},
			{Kind: eventsv1.KindDeployment, Name: "worker", Containers: []eventsv1.InventoryContainer{{Name: "app", Image: "demo/app:1", Digest: d, Pods: 1}}}}}
		id := eventsv1.InventoryID(s)
		e.publish(e.op, eventsv1.SourceOperator, eventsv1.TypeInventorySnapshot, id, id, s)
	}
	waitIdle(t, e, n, 6)
	var items []receiver.NotificationItem
	for i := 2; i < rc.accepted(); i++ {
		var ev receiver.CloudEvent
		if err := json.Unmarshal(rc.body(i), &ev); err != nil {
			t.Fatal(err)
		}
		items = append(items, ev.Data.Items...)
	}
	if got := itemFindings(items); !slices.Equal(got["a/running"], []string{"CVE-2026-0002"}) ||
		!slices.Equal(got["b/running"], []string{"CVE-2026-0001", "CVE-2026-0002"}) || len(got) != 2 {
		t.Fatalf("running items %v, want a told of CVE-2026-0002 only and b of both", got)
	}
	if s := n.count("crowsnest_notifier_suppressed_total", "route", "all", "kind", "new"); s != 2 {
		t.Errorf("suppressed new findings counted %v, want 2 (one per change, in a)", s)
	}
	if s := n.count("crowsnest_notifier_suppressed_total", "route", "all", "kind", "kev"); s != 2 {
		t.Errorf("suppressed KEV listings counted %v, want 2 (in a and b)", s)
	}
}
