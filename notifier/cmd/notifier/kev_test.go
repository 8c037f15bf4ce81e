package main

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	"github.com/crowsnest-dev/crowsnest/notifier/internal/amtest"
)

// TestKEVAddedNotifiedOnce: a findings.changed whose only change is a
// finding newly listed in CISA KEV is exactly one alert in a real
// Alertmanager and one webhook message to a `kev: true` route, which
// says so; the same event again (a new Nats-Msg-Id, so JetStream keeps
// it) sends nothing more, and a new finding that is neither KEV-listed nor
// scored at or above the route's minEpss says nothing to the kev route.
func TestKEVAddedNotifiedOnce(t *testing.T) {
	rc, hook := newReceiver(t), newReceiver(t)
	am := amtest.Start(t, hook.URL) // before the env's context starts: see TestRealAlertmanager
	e := newEnv(t)
	n := e.start(e.options(`
receivers:
- {name: am, alertmanager: {url: "` + am + `"}}
- {name: hook, webhook: {url: "` + rc.URL + `"}}
routes:
- {name: prod, receiver: am, minSeverity: high, groupWait: 10ms}
- {name: exploited, receiver: hook, minSeverity: low, kev: true, minEpss: 0.3, groupWait: 10ms}
`))
	d := digest('c')
	e.inventory("a", d, nil)
	epss := 0.35
	p := eventsv1.FindingsChanged{ChangeID: 5, Digest: d, Image: "registry.example/demo/app@" + d, Cause: eventsv1.CauseRematch,
		ChangedAt: time.Now(), KEVAddedCount: 1, KEVAdded: []eventsv1.ChangedFinding{{ID: "CVE-2026-0700", Severity: "high",
			Package: eventsv1.ChangedPackage{Name: "openssl", Version: "3.0.1", Type: "apk"}, KEV: true, EPSS: &epss}}}
	id := eventsv1.ID(eventsv1.TypeFindingsChanged, d, "5")
	e.publish(e.api, eventsv1.SourceResultsAPI, eventsv1.TypeFindingsChanged, id, id, p)
	waitIdle(t, e, n, 2)
	if sent := n.count("crowsnest_notifier_sent_total"); sent != 2 || rc.accepted() != 1 {
		t.Fatalf("sent %v (webhook %d), want one alert and one webhook message (invalid events: %v)", sent, rc.accepted(),
			n.count("crowsnest_notifier_events_total", "result", "invalid"))
	}
	it := lastEvent(t, rc).Data.Items[0]
	if it.Kind != "kev" || len(it.Findings) != 1 || it.Findings[0].ID != "CVE-2026-0700" || !it.Findings[0].KEV ||
		it.Title != "1 vulnerability in registry.example/demo/app@"+d+" newly listed in CISA KEV (a)" {
		t.Fatalf("kev item %+v", it)
	}

	e.publish(e.api, eventsv1.SourceResultsAPI, eventsv1.TypeFindingsChanged, id, id+"-again", p)
	eventually(t, "the duplicate handled", func() bool {
		return n.count("crowsnest_notifier_events_total", "result", "duplicate") == 1
	})
	// A new high finding, not KEV-listed, EPSS under 0.3: prod's alone.
	low := 0.1
	id2 := eventsv1.ID(eventsv1.TypeFindingsChanged, d, "6")
	e.publish(e.api, eventsv1.SourceResultsAPI, eventsv1.TypeFindingsChanged, id2, id2, eventsv1.FindingsChanged{ChangeID: 6, Digest: d,
		Image: p.Image, Cause: eventsv1.CauseRematch, ChangedAt: time.Now(), NewCounts: eventsv1.SeverityCounts{High: 1},
		New: []eventsv1.ChangedFinding{{ID: "CVE-2026-0701", Severity: "high", Package: eventsv1.ChangedPackage{Name: "zlib", Version: "1"}, EPSS: &low}}})
	waitIdle(t, e, n, 4)
	if rc.accepted() != 1 {
		t.Fatalf("kev route got %d messages, want still 1", rc.accepted())
	}

	resp, err := http.Get(am + "/api/v2/alerts")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var alerts []struct {
		Labels map[string]string `json:"labels"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&alerts); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, a := range alerts {
		names = append(names, a.Labels["alertname"]+"/"+a.Labels["vulnerabilities"])
	}
	slices.Sort(names)
	if want := []string{"CrowsnestNewVulnerability/CVE-2026-0701", "CrowsnestVulnerabilityListedInKEV/CVE-2026-0700"}; !slices.Equal(names, want) {
		t.Fatalf("alertmanager holds %v, want %v", names, want)
	}
}
