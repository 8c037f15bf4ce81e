package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	"github.com/crowsnest-dev/crowsnest/notifier/internal/receiver"
)

// twoRoutes routes namespace a to receiver ra (a signed structured
// webhook) and namespace b to rb (a signed binary-mode webhook).
func twoRoutes(e *env, ra, rb *endpoint, groupWait string) string {
	key := e.write("hmac-key", "s3cret-key\n")
	return fmt.Sprintf(`
receivers:
- name: ra
  webhook: {url: %q, hmacKeyFile: %q}
- name: rb
  webhook: {url: %q, mode: binary, hmacKeyFile: %q}
routes:
- {name: route-a, receiver: ra, namespaces: [a], minSeverity: high, groupWait: %s}
- {name: route-b, receiver: rb, namespaceSelector: "team=b", groupWait: %s}
`, ra.URL, key, rb.URL, key, groupWait, groupWait)
}

// waitIdle waits until the notifier handled n events and has nothing open,
// sealed or queued: whatever it was going to send went out.
func waitIdle(t *testing.T, e *env, n *notifier, events float64) {
	t.Helper()
	st := e.store()
	eventually(t, fmt.Sprintf("%v events handled and nothing pending", events), func() bool {
		if n.count("crowsnest_notifier_events_total") < events {
			return false
		}
		open, err := st.Open(e.ctx)
		if err != nil || len(open.Groups) > 0 {
			return false
		}
		ids, err := st.SealedIDs(e.ctx)
		return err == nil && len(ids) == 0
	})
}

// TestGroupedOncePerRouteAndDuplicateIgnored: a findings.changed with two
// new criticals in namespace a is exactly one message to a's route (both
// CVEs, the workload, the dashboard link, a valid signature) and nothing
// to b's; the same event again (same CloudEvents id, a different
// Nats-Msg-Id so that JetStream stores it) sends nothing more.
func TestGroupedOncePerRouteAndDuplicateIgnored(t *testing.T) {
	e := newEnv(t)
	ra, rb := newReceiver(t), newReceiver(t)
	n := e.start(e.options(twoRoutes(e, ra, rb, "50ms")))

	e.inventory("a", digest('a'), nil)
	e.inventory("b", digest('b'), map[string]string{"team": "b"})
	id := e.findings(digest('a'), 7, "CVE-2026-0001", "CVE-2026-0002")
	waitIdle(t, e, n, 3)
	if got := ra.accepted(); got != 1 {
		t.Fatalf("route a got %d messages, want 1", got)
	}
	if got := rb.accepted(); got != 0 {
		t.Fatalf("route b got %d messages, want 0", got)
	}
	var ev receiver.CloudEvent
	if err := json.Unmarshal(ra.body(0), &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Type != receiver.TypeNotification || ev.Source != receiver.SourceNotifier || ev.ID == "" {
		t.Fatalf("envelope %+v", ev)
	}
	if len(ev.Data.Items) != 1 || len(ev.Data.Items[0].Findings) != 2 || ev.Data.Items[0].Namespace != "a" {
		t.Fatalf("want one item with both CVEs in a: %+v", ev.Data.Items)
	}
	it := ev.Data.Items[0]
	if it.Findings[0].ID != "CVE-2026-0001" || it.Findings[1].FixedIn[0] != "3.0.9" || it.Workloads[0] != "Deployment/web" ||
		it.Dashboard != "https://crowsnest.example/images/"+digest('a') {
		t.Fatalf("item %+v", it)
	}
	if ct := ra.headers[0].Get("Content-Type"); ct != "application/cloudevents+json" {
		t.Fatalf("content type %q", ct)
	}
	if err := receiver.Verify([]byte("s3cret-key"), ra.headers[0].Get(receiver.SignatureHeader), ra.body(0), time.Now(), time.Minute); err != nil {
		t.Fatalf("signature: %v", err)
	}

	// The duplicate: same CloudEvents id, new Nats-Msg-Id.
	p := eventsv1.FindingsChanged{ChangeID: 7, Digest: digest('a'), Image: "registry.example/demo/app@" + digest('a'), Cause: eventsv1.CauseRematch,
		ChangedAt: time.Now(), New: []eventsv1.ChangedFinding{{ID: "CVE-2026-0001", Severity: "critical"}}, NewCounts: eventsv1.SeverityCounts{Critical: 1}}
	e.publish(e.api, eventsv1.SourceResultsAPI, eventsv1.TypeFindingsChanged, id, id+"-again", p)
	eventually(t, "the duplicate handled", func() bool {
		return n.count("crowsnest_notifier_events_total", "result", "duplicate") == 1
	})
	waitIdle(t, e, n, 4)
	if got := ra.accepted(); got != 1 {
		t.Fatalf("after the duplicate route a got %d messages, want 1", got)
	}

	// b's route takes b's findings, in binary mode.
	e.findings(digest('b'), 1, "CVE-2026-0003")
	waitIdle(t, e, n, 5)
	if ra.accepted() != 1 || rb.accepted() != 1 {
		t.Fatalf("a=%d b=%d, want 1 each", ra.accepted(), rb.accepted())
	}
	h := rb.headers[0]
	if h.Get("Ce-Type") != receiver.TypeNotification || h.Get("Ce-Id") == "" || h.Get("Content-Type") != "application/json" {
		t.Fatalf("binary mode headers %v", h)
	}
	if !strings.Contains(string(rb.body(0)), "CVE-2026-0003") {
		t.Fatalf("binary body %s", rb.body(0))
	}
	// The binary-mode signature (v2) covers the ce-* headers as received.
	if err := receiver.VerifyRequest([]byte("s3cret-key"), h, rb.body(0), time.Now(), time.Minute); err != nil {
		t.Fatalf("binary-mode signature: %v", err)
	}
	if err := n.stop(); err != nil {
		t.Fatalf("run: %v", err)
	}
	_ = http.StatusOK
}
