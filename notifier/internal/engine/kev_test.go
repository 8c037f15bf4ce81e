package engine

import (
	"testing"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	"github.com/crowsnest-dev/crowsnest/notifier/internal/config"
	"github.com/crowsnest-dev/crowsnest/notifier/internal/state"
)

func rated(id, sev string, kev bool, epss float64) eventsv1.ChangedFinding {
	f := eventsv1.ChangedFinding{ID: id, Severity: sev, Package: eventsv1.ChangedPackage{Name: "p-" + id, Version: "1"}, KEV: kev}
	if epss >= 0 {
		f.EPSS = &epss
	}
	return f
}

func findingIDs(it state.Item) []string {
	var out []string
	for _, f := range it.Findings {
		out = append(out, f.ID)
	}
	return out
}

// TestKEVAddedNotified: a findings.changed with a KEV-added finding is one
// kev item per route and namespace that matches it (a route that did not
// list the kev kind gets none); a kev route does not notify a new finding
// that is not KEV-listed and under its EPSS score, and a first scan's
// counts say nothing to a route that filters on risk.
func TestKEVAddedNotified(t *testing.T) {
	c := cfg(t, `routes:
- {name: defaults, receiver: x, minSeverity: high}
- {name: kev-only, receiver: x, minSeverity: low, kev: true}
- {name: likely, receiver: x, minSeverity: low, minEpss: 0.5}
- {name: new-only, receiver: x, minSeverity: low, kinds: [new]}`)
	inv := map[string]*state.Namespace{"a": namespaceOf(snapshot("a", "web"))}
	ev := eventsv1.Event{ID: "e1"}
	p := eventsv1.FindingsChanged{ChangeID: 2, Digest: dA, Cause: eventsv1.CauseRematch, KEVAddedCount: 1,
		KEVAdded: []eventsv1.ChangedFinding{rated("CVE-K", "high", true, 0.2)}}
	got := map[string][]string{}
	items, _ := findingsItems(c, ev, p, inv)
	for _, r := range items {
		if r.item.Kind != config.KindKEV {
			t.Errorf("route %s: kind %s, want kev", r.route, r.item.Kind)
		}
		got[r.route] = findingIDs(r.item)
	}
	// likely: EPSS 0.2 is under 0.5, KEV or not; new-only: no kev kind.
	if len(got) != 2 || len(got["defaults"]) != 1 || len(got["kev-only"]) != 1 {
		t.Fatalf("kevAdded routed to %v, want defaults and kev-only", got)
	}

	// New findings: the kev route takes only the KEV-listed one, the EPSS
	// route only the one scored at or above 0.5.
	p = eventsv1.FindingsChanged{ChangeID: 3, Digest: dA, Cause: eventsv1.CauseRescan,
		New: []eventsv1.ChangedFinding{rated("CVE-1", "critical", false, 0.1), rated("CVE-2", "medium", true, -1),
			rated("CVE-3", "low", false, 0.5), rated("CVE-4", "critical", false, -1)}}
	got = map[string][]string{}
	items, _ = findingsItems(c, ev, p, inv)
	for _, r := range items {
		got[r.route] = findingIDs(r.item)
	}
	for route, want := range map[string]string{"kev-only": "CVE-2", "likely": "CVE-3"} {
		if ids := got[route]; len(ids) != 1 || ids[0] != want {
			t.Errorf("route %s notified %v, want [%s]", route, ids, want)
		}
	}
	if ids := got["defaults"]; len(ids) != 2 {
		t.Errorf("route defaults notified %v, want the two criticals", ids)
	}

	base, _ := findingsItems(c, ev, eventsv1.FindingsChanged{ChangeID: 1, Digest: dA, Cause: eventsv1.CauseScan, Baseline: true,
		NewCounts: eventsv1.SeverityCounts{Critical: 3}}, inv)
	for _, r := range base {
		if r.route == "kev-only" || r.route == "likely" {
			t.Errorf("baseline counts sent to risk route %s", r.route)
		}
	}
}

// TestKEVListingReachesRunning: a critical finding that gains a KEV
// listing is KEV-listed in the digest's critical state, so a kev route
// notifies it when a workload starts running the digest.
func TestKEVListingReachesRunning(t *testing.T) {
	c := cfg(t, "routes: [{name: kev, receiver: x, kev: true, kinds: [running]}]")
	crits, _ := applyCriticals(state.Criticals{}, eventsv1.FindingsChanged{ChangeID: 1, New: []eventsv1.ChangedFinding{crit("CVE-1"), crit("CVE-2")},
		NewCounts: eventsv1.SeverityCounts{Critical: 2}})
	get := func(string) state.Criticals { return crits }
	if items := runningItems(c, eventsv1.Event{ID: "s1"}, nil, namespaceOf(snapshot("a", "web")), get); len(items) != 0 {
		t.Fatalf("no KEV listing yet: %+v", items)
	}
	listed := crit("CVE-2")
	listed.KEV = true
	crits, _ = applyCriticals(crits, eventsv1.FindingsChanged{ChangeID: 2, KEVAdded: []eventsv1.ChangedFinding{listed}, KEVAddedCount: 1})
	items := runningItems(c, eventsv1.Event{ID: "s2"}, nil, namespaceOf(snapshot("a", "web")), get)
	if len(items) != 1 || len(items[0].item.Findings) != 1 || items[0].item.Findings[0].ID != "CVE-2" || crits.Count != 2 {
		t.Fatalf("after the listing: %+v (criticals %+v)", items, crits)
	}
}
