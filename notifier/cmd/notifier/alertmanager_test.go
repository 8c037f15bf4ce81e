package main

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/crowsnest-dev/crowsnest/notifier/internal/amtest"
	"github.com/crowsnest-dev/crowsnest/notifier/internal/receiver"
)

// TestRealAlertmanager posts to a real Alertmanager (amtest.Version, built
// from the module proxy, not a stand-in): it accepts the alerts, lists
// them with our labels from its own API, and routes them to its webhook
// receiver.
func TestRealAlertmanager(t *testing.T) {
	// Alertmanager first: a cold start builds it (minutes under load),
	// which must not eat the env's two-minute context.
	hook := newReceiver(t)
	am := amtest.Start(t, hook.URL)
	e := newEnv(t)
	t.Logf("using a real Alertmanager %s at %s", amtest.Version, am)
	n := e.start(e.options(`
receivers:
- {name: am, alertmanager: {url: "` + am + `"}}
routes:
- {name: prod, receiver: am, groupWait: 10ms}
`))
	e.inventory("a", digest('a'), nil)
	e.findings(digest('a'), 1, "CVE-2026-0500", "CVE-2026-0501")
	waitIdle(t, e, n, 2)
	if sent, failed := n.count("crowsnest_notifier_sent_total"), n.count("crowsnest_notifier_failed_total"); sent != 1 || failed != 0 {
		t.Fatalf("sent %v failed %v, want 1 and 0", sent, failed)
	}
	resp, err := http.Get(am + "/api/v2/alerts")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var alerts []struct {
		Labels       map[string]string `json:"labels"`
		GeneratorURL string            `json:"generatorURL"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&alerts); err != nil {
		t.Fatal(err)
	}
	if len(alerts) != 1 {
		t.Fatalf("alertmanager holds %d alerts, want 1", len(alerts))
	}
	l := alerts[0].Labels
	if l["alertname"] != "CrowsnestNewVulnerability" || l["namespace"] != "a" || l["severity"] != "critical" ||
		l["vulnerabilities"] != "CVE-2026-0500,CVE-2026-0501" || l[receiver.LabelGroup] == "" ||
		alerts[0].GeneratorURL != "https://crowsnest.example/images/"+digest('a') {
		t.Fatalf("alert %+v", alerts[0])
	}
	eventually(t, "alertmanager routing the alert to its webhook", func() bool { return hook.accepted() == 1 })
}
