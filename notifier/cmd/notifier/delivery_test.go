package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	"github.com/crowsnest-dev/crowsnest/notifier/internal/receiver"
)

// TestRetriedAfterThree500s: a receiver answering 500 three times gets the
// message on the fourth attempt, once; the failures are counted, nothing
// is dead-lettered.
func TestRetriedAfterThree500s(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	rc.handle = func(w http.ResponseWriter, _ *http.Request, attempt int) bool {
		if attempt <= 3 {
			w.WriteHeader(http.StatusInternalServerError)
			return false
		}
		return true
	}
	n := e.start(e.options(`
receivers:
- {name: hook, webhook: {url: "` + rc.URL + `"}}
routes:
- {name: all, receiver: hook, groupWait: 10ms}
`))
	e.inventory("a", digest('a'), nil)
	e.findings(digest('a'), 1, "CVE-2026-0200")
	waitIdle(t, e, n, 2)
	if rc.accepted() != 1 || rc.attempts != 4 {
		t.Fatalf("accepted %d after %d attempts, want 1 after 4", rc.accepted(), rc.attempts)
	}
	if f, d := n.count("crowsnest_notifier_failed_total", "receiver", "hook"), n.count("crowsnest_notifier_dead_letter_total"); f != 3 || d != 0 {
		t.Fatalf("failed %v dead-lettered %v, want 3 and 0", f, d)
	}
}

// TestSlowReceiverDoesNotDelayAnother: one route's receiver holds its
// request open; the other route's receiver gets its message meanwhile.
// Slack is the fast one here (a Slack-compatible endpoint that checks the
// Block Kit shape); Alertmanager is the slow one.
func TestSlowReceiverDoesNotDelayAnother(t *testing.T) {
	e := newEnv(t)
	slow, fast := newReceiver(t), newReceiver(t)
	inSlow, release := make(chan struct{}), make(chan struct{})
	slow.handle = func(_ http.ResponseWriter, r *http.Request, attempt int) bool {
		var alerts []receiver.Alert
		if err := json.NewDecoder(r.Body).Decode(&alerts); err != nil || len(alerts) != 1 {
			t.Errorf("alertmanager body: %v", err)
		}
		if attempt > 1 { // the first attempt timed out (10s): held, not failed
			return false
		}
		close(inSlow)
		<-release
		return true
	}
	fast.handle = func(w http.ResponseWriter, r *http.Request, _ int) bool { return slackCompatible(t, w, r) }
	url := e.write("slack-url", fast.URL+"/services/T000/B000/XXXX\n")
	n := e.start(e.options(`
receivers:
- {name: am, alertmanager: {url: "` + slow.URL + `"}}
- {name: chat, slack: {webhookURLFile: "` + url + `"}}
routes:
- {name: to-am, receiver: am, groupWait: 10ms}
- {name: to-chat, receiver: chat, groupWait: 10ms}
`))
	e.inventory("a", digest('a'), nil)
	e.findings(digest('a'), 1, "CVE-2026-0300")
	<-inSlow
	eventually(t, "the fast receiver's message while the slow one holds its request", func() bool { return fast.accepted() == 1 })
	if slow.accepted() != 0 {
		t.Fatal("the slow receiver finished first")
	}
	close(release)
	waitIdle(t, e, n, 2)
	if slow.accepted() != 1 || fast.accepted() != 1 {
		t.Fatalf("slow %d fast %d, want 1 each", slow.accepted(), fast.accepted())
	}
	var msg receiver.SlackMessage
	if err := json.Unmarshal(fast.body(0), &msg); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(msg.Blocks[1].Text.Text, "CVE-2026-0300") || !strings.Contains(msg.Blocks[1].Text.Text, "fixed in 3.0.9") {
		t.Fatalf("slack section %q", msg.Blocks[1].Text.Text)
	}
}

// slackCompatible answers like Slack's incoming webhooks: 200 "ok" for a
// JSON object with text and well-formed blocks, 400 otherwise.
func slackCompatible(t *testing.T, w http.ResponseWriter, r *http.Request) bool {
	var m receiver.SlackMessage
	ok := r.URL.Path == "/services/T000/B000/XXXX" && r.Header.Get("Content-Type") == "application/json" &&
		json.NewDecoder(r.Body).Decode(&m) == nil && m.Text != "" && len(m.Blocks) > 0 && len(m.Blocks) <= 50
	for _, b := range m.Blocks {
		switch b.Type {
		case "header", "section":
			ok = ok && b.Text != nil && b.Text.Text != "" && len(b.Text.Text) <= 3000
		case "context":
			ok = ok && len(b.Elements) > 0
		default:
			ok = false
		}
	}
	if !ok {
		t.Errorf("not a valid Slack message: %s %s", r.URL.Path, r.Header.Get("Content-Type"))
		http.Error(w, "invalid_blocks", http.StatusBadRequest)
		return false
	}
	_, _ = w.Write([]byte("ok"))
	return true
}

// TestDryRunPrintsInsteadOfSending: with --dry-run nothing reaches the
// receiver; stdout shows the request, and the Slack URL (a secret) is not
// printed.
func TestDryRunPrintsInsteadOfSending(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	url := e.write("slack-url", rc.URL+"/services/T000/B000/SECRET")
	n := e.start(e.options(`
receivers:
- {name: chat, slack: {webhookURLFile: "`+url+`"}}
routes:
- {name: all, receiver: chat, groupWait: 10ms}
`, "--dry-run"))
	e.inventory("a", digest('a'), nil)
	e.findings(digest('a'), 1, "CVE-2026-0400")
	waitIdle(t, e, n, 2)
	out := n.stdout.String()
	if rc.attempts != 0 {
		t.Fatalf("dry run sent %d requests", rc.attempts)
	}
	for _, want := range []string{"--- dry-run receiver=chat route=all group=", "POST /%3Credacted%3E", "CVE-2026-0400"} {
		if !strings.Contains(out, want) {
			t.Fatalf("dry-run output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "SECRET") {
		t.Fatalf("dry-run output shows the Slack URL:\n%s", out)
	}
}

// TestDefaultConsumer: the notifier user may create the durable consumer
// the contract names for it ("notifier", the --consumer default), and the
// reader user, which any other tool holds, may not take it over.
func TestDefaultConsumer(t *testing.T) {
	e := newEnv(t)
	def, _ := parse(nil, func(string) string { return "" }, nil)
	ctx, cancel := context.WithTimeout(e.ctx, 5*time.Second)
	defer cancel()
	_, err := e.js(eventsv1.UserNotifier).CreateOrUpdateConsumer(ctx, eventsv1.StreamName, jetstream.ConsumerConfig{Durable: def.Consumer,
		FilterSubjects: []string{eventsv1.SubjectJobDone, eventsv1.SubjectFindingsChanged}, AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatalf("the notifier user cannot create its contract consumer %q: %v", def.Consumer, err)
	}
	rctx, rcancel := context.WithTimeout(e.ctx, 3*time.Second)
	defer rcancel()
	if _, err := e.js(eventsv1.UserReader).CreateOrUpdateConsumer(rctx, eventsv1.StreamName, jetstream.ConsumerConfig{Durable: def.Consumer,
		FilterSubjects: []string{eventsv1.SubjectJobDone}, AckPolicy: jetstream.AckExplicitPolicy}); err == nil {
		t.Fatalf("the reader user replaced the notifier's consumer %q", def.Consumer)
	}
}
