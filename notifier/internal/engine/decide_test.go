package engine

import (
	"testing"
	"time"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	"github.com/crowsnest-dev/crowsnest/notifier/internal/config"
	"github.com/crowsnest-dev/crowsnest/notifier/internal/state"
)

const dA = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

func cfg(t *testing.T, routes string) *config.Config {
	t.Helper()
	c, err := config.Parse([]byte("receivers: [{name: x, webhook: {url: 'http://h'}}]\n" + routes))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func crit(id string, fixed ...string) eventsv1.ChangedFinding {
	return eventsv1.ChangedFinding{ID: id, Severity: "critical", Package: eventsv1.ChangedPackage{Name: "p", Version: "1"}, FixedIn: fixed}
}

func snapshot(ns string, workloads ...string) eventsv1.InventorySnapshot {
	s := eventsv1.InventorySnapshot{Namespace: ns}
	for _, w := range workloads {
		s.Workloads = append(s.Workloads, eventsv1.InventoryWorkload{Kind: "Deployment", Name: w,
			Containers: []eventsv1.InventoryContainer{{Name: "c", Image: "app:1", Digest: dA, Pods: 1}}})
	}
	return s
}

// TestCriticalsFollowChanges: the per-digest critical state follows a
// baseline (counts only), new and resolved criticals, and ignores a replay.
func TestCriticalsFollowChanges(t *testing.T) {
	c, ok := applyCriticals(state.Criticals{}, eventsv1.FindingsChanged{ChangeID: 1, Digest: dA, Baseline: true, NewCounts: eventsv1.SeverityCounts{Critical: 2}})
	if !ok || c.Count != 2 || len(c.Listed) != 0 {
		t.Fatalf("baseline: %+v", c)
	}
	c, _ = applyCriticals(c, eventsv1.FindingsChanged{ChangeID: 2, New: []eventsv1.ChangedFinding{crit("CVE-3")}, NewCounts: eventsv1.SeverityCounts{Critical: 1}})
	c, _ = applyCriticals(c, eventsv1.FindingsChanged{ChangeID: 3, Resolved: []eventsv1.ChangedFinding{crit("CVE-3")}, ResolvedCounts: eventsv1.SeverityCounts{Critical: 1}})
	if c.Count != 2 || len(c.Listed) != 0 {
		t.Fatalf("after new and resolved: %+v", c)
	}
	if _, ok := applyCriticals(c, eventsv1.FindingsChanged{ChangeID: 3, NewCounts: eventsv1.SeverityCounts{Critical: 5}}); ok {
		t.Fatal("a replayed change was applied again")
	}
}

// TestRunningItems: a workload that starts running a digest with critical
// findings is notified once (the snapshot again adds nothing), with the
// listed criticals and the count; a fixable-only route skips unfixable
// ones; a digest without criticals says nothing.
func TestRunningItems(t *testing.T) {
	c := cfg(t, "routes: [{name: all, receiver: x}, {name: fix, receiver: x, fixableOnly: true}]")
	ev := eventsv1.Event{ID: "e1", Time: time.Now()}
	crits := state.Criticals{Count: 3, Listed: []state.Finding{{ID: "CVE-1", Severity: "critical"}}}
	get := func(string) state.Criticals { return crits }
	first := namespaceOf(snapshot("a", "web"))
	items := runningItems(c, ev, nil, first, get)
	if len(items) != 1 || items[0].route != "all" || items[0].item.Workloads[0] != "Deployment/web" ||
		len(items[0].item.Findings) != 1 || items[0].item.Counts["critical"] != 3 {
		t.Fatalf("first snapshot: %+v", items)
	}
	if again := runningItems(c, ev, first, namespaceOf(snapshot("a", "web")), get); len(again) != 0 {
		t.Fatalf("same snapshot again: %+v", again)
	}
	scaled := runningItems(c, ev, first, namespaceOf(snapshot("a", "web", "worker")), get)
	if len(scaled) != 1 || len(scaled[0].item.Workloads) != 1 || scaled[0].item.Workloads[0] != "Deployment/worker" {
		t.Fatalf("a second workload: %+v", scaled)
	}
	crits = state.Criticals{}
	if none := runningItems(c, ev, nil, first, get); len(none) != 0 {
		t.Fatalf("no criticals: %+v", none)
	}
}

// TestFindingsItems: only running digests, in namespaces the route takes,
// at or above its severity; a baseline says its counts; resolved criticals
// only where asked for.
func TestFindingsItems(t *testing.T) {
	c := cfg(t, `routes:
- {name: a-high, receiver: x, namespaces: [a], minSeverity: high, kinds: [new, resolved]}
- {name: scans-only, receiver: x, causes: [scan]}`)
	inv := map[string]*state.Namespace{"a": namespaceOf(snapshot("a", "web")), "b": namespaceOf(snapshot("b", "api"))}
	ev := eventsv1.Event{ID: "e1"}
	p := eventsv1.FindingsChanged{Digest: dA, Cause: eventsv1.CauseRematch,
		New:      []eventsv1.ChangedFinding{crit("CVE-1"), {ID: "CVE-2", Severity: "medium"}},
		Resolved: []eventsv1.ChangedFinding{crit("CVE-0")}}
	items, _ := findingsItems(c, ev, p, inv)
	if len(items) != 2 || items[0].item.Kind != config.KindNew || len(items[0].item.Findings) != 1 || items[1].item.Kind != config.KindResolved {
		t.Fatalf("rematch: %+v", items)
	}
	base, _ := findingsItems(c, ev, eventsv1.FindingsChanged{Digest: dA, Cause: eventsv1.CauseScan, Baseline: true,
		NewCounts: eventsv1.SeverityCounts{Critical: 1, High: 4, Low: 9}}, inv)
	if len(base) != 3 { // a-high in a; scans-only in a and b
		t.Fatalf("baseline: %+v", base)
	}
	if got := base[0].item.Counts; got["critical"] != 1 || got["high"] != 4 || got["low"] != 0 {
		t.Fatalf("baseline counts %v", got)
	}
	if none, _ := findingsItems(c, ev, eventsv1.FindingsChanged{Digest: dA, Cause: eventsv1.CauseScan}, map[string]*state.Namespace{}); len(none) != 0 {
		t.Fatalf("not running: %+v", none)
	}
}

// TestScanFailures: the threshold within the window notifies once and
// starts counting again; failures older than the window do not count.
func TestScanFailures(t *testing.T) {
	c := cfg(t, "routes: [{name: all, receiver: x}]\nscanFailures: {threshold: 2, window: 1h}")
	now := time.Now()
	f := state.Failures{Events: map[string]time.Time{"old": now.Add(-2 * time.Hour)}}
	items, f := failureItems(c, eventsv1.Event{ID: "e1", Time: now}, eventsv1.JobDone{Namespace: "a"}, f, nil, now)
	if len(items) != 0 || len(f.Events) != 1 {
		t.Fatalf("one failure: %+v %+v", items, f)
	}
	items, f = failureItems(c, eventsv1.Event{ID: "e2", Time: now}, eventsv1.JobDone{Namespace: "a", Reason: "ImagePullFailed"}, f, nil, now)
	if len(items) != 1 || items[0].item.Failures != 2 || len(f.Events) != 0 {
		t.Fatalf("second failure: %+v %+v", items, f)
	}
}
