package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	"github.com/crowsnest-dev/crowsnest/matcher/dbwrite/advisory"
	"github.com/crowsnest-dev/crowsnest/matcher/internal/events"
	"github.com/crowsnest-dev/crowsnest/test/support/natstest"
	"github.com/crowsnest-dev/crowsnest/test/support/resultsapitest"
)

// streamReader reads the stream's events in order through one durable
// consumer of the reader user (the notifier's and third parties'
// identity, which may not delete consumers).
type streamReader struct {
	t   *testing.T
	js  jetstream.JetStream
	c   jetstream.Consumer
	all []eventsv1.Event
}

// events returns every event the stream received so far.
func (r *streamReader) events() []eventsv1.Event {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if r.c == nil {
		s, err := r.js.Stream(ctx, eventsv1.StreamName)
		if err != nil {
			return nil // not created yet
		}
		if r.c, err = s.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "matcher-serve-test", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
			r.t.Fatal(err)
		}
	}
	batch, err := r.c.Fetch(100, jetstream.FetchMaxWait(300*time.Millisecond))
	if err != nil {
		r.t.Fatal(err)
	}
	for m := range batch.Messages() {
		ev, err := eventsv1.Parse(m.Subject(), m.Data(), time.Now(), time.Minute)
		if err != nil {
			r.t.Fatalf("invalid event on %s: %v", m.Subject(), err)
		}
		if id := m.Headers().Get(jetstream.MsgIDHeader); id != ev.ID {
			r.t.Errorf("Nats-Msg-Id %q, event id %q", id, ev.ID)
		}
		if err := m.Ack(); err != nil {
			r.t.Fatal(err)
		}
		r.all = append(r.all, ev)
	}
	return r.all
}

func ofType(evs []eventsv1.Event, typ string) []eventsv1.Event {
	var out []eventsv1.Event
	for _, e := range evs {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// waitEvents waits until the stream holds exactly want of each type, then
// gives the matcher time to publish a duplicate and checks the counts stay.
func waitEvents(t *testing.T, r *streamReader, updated, done int) []eventsv1.Event {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	var evs []eventsv1.Event
	for {
		evs = r.events()
		u, d := len(ofType(evs, eventsv1.TypeVulnDBUpdated)), len(ofType(evs, eventsv1.TypeRematchDone))
		if u > updated || d > done {
			t.Fatalf("stream holds %d vulndb.updated and %d rematch.done, want %d and %d", u, d, updated, done)
		}
		if u == updated && d == done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 3m the stream holds %d vulndb.updated and %d rematch.done, want %d and %d", u, d, updated, done)
		}
	}
	time.Sleep(time.Second)
	if again := r.events(); len(again) != len(evs) {
		t.Fatalf("stream grew from %d to %d events", len(evs), len(again))
	}
	return evs
}

func rematchDone(t *testing.T, ev eventsv1.Event) eventsv1.RematchDone {
	t.Helper()
	var p eventsv1.RematchDone
	if err := ev.Decode(&p); err != nil {
		t.Fatal(err)
	}
	return p
}

func vulnDBUpdated(t *testing.T, ev eventsv1.Event) eventsv1.VulnDBUpdated {
	t.Helper()
	var p eventsv1.VulnDBUpdated
	if err := ev.Decode(&p); err != nil {
		t.Fatal(err)
	}
	return p
}

func checkDone(t *testing.T, ev eventsv1.Event, dbBuilt time.Time, total, changed, unchanged, failed int) {
	t.Helper()
	p := rematchDone(t, ev)
	got := fmt.Sprintf("db %s total %d changed %d unchanged %d failed %d", p.DBBuilt.UTC().Format(time.RFC3339), p.ReportsTotal, p.ReportsChanged, p.ReportsUnchanged, p.ReportsFailed)
	want := fmt.Sprintf("db %s total %d changed %d unchanged %d failed %d", dbBuilt.UTC().Format(time.RFC3339), total, changed, unchanged, failed)
	if got != want {
		t.Errorf("rematch.done: %s, want %s", got, want)
	}
}

type changeItem struct {
	Digest   string `json:"digest"`
	Cause    string `json:"cause"`
	DBBuilt  string `json:"dbBuilt"`
	Baseline bool   `json:"baseline"`
}

// rematchChanges lists results-api's changes after the baselines, by DB
// build. They are recorded with cause rescan, not rematch: the admin token
// standing in for the rematch scope is what results-api goes by.
func rematchChanges(t *testing.T, api *resultsapitest.Server) map[string][]string {
	t.Helper()
	resp, err := api.Client().Get(api.URL + "/api/v1/changes?limit=100")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/v1/changes: HTTP %d", resp.StatusCode)
	}
	var cl struct{ Items []changeItem }
	if err := json.NewDecoder(resp.Body).Decode(&cl); err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, c := range cl.Items {
		if c.Baseline {
			continue
		}
		if c.Cause != string(eventsv1.CauseRescan) {
			t.Errorf("listed change %+v", c)
		}
		b, _ := time.Parse(time.RFC3339, c.DBBuilt)
		out[b.UTC().Format(time.RFC3339)] = append(out[b.UTC().Format(time.RFC3339)], c.Digest)
	}
	for k := range out {
		slices.Sort(out[k])
	}
	return out
}

func digestsOf(reps []storedReport, names map[string]bool) []string {
	var out []string
	for _, r := range reps {
		if names[r.name] {
			out = append(out, r.digest)
		}
	}
	slices.Sort(out)
	return out
}

// TestServeRematchAndEvents runs `matcher serve` with a real results-api
// holding the stored fixture reports and a real JetStream server with the
// contract's users: each DB upload publishes one crowsnest.vulndb.updated,
// re-matches every report and publishes one crowsnest.rematch.done with the
// exact counts; results-api lists the changes DB 2 made. Then NATS goes
// down, DB 3 is uploaded and re-matched, the matcher is restarted while
// NATS is still down, and NATS comes back: both events arrive, once.
func TestServeRematchAndEvents(t *testing.T) {
	pw := map[eventsv1.User]string{eventsv1.UserMatcher: "pw-matcher", eventsv1.UserReader: "pw-reader"}
	ns, natsURL := natstest.StartAuthT(t, pw)
	api := resultsapitest.Start(t)
	reps := storeFixtures(t, api)

	dataDir := t.TempDir()
	admin := "admin-secret"
	args := []string{
		"--data-dir", dataDir, "--upstream-url", "off", "--log-level", "warn",
		"--admin-token-file", writeFile(t, "admin", admin),
		"--results-api-url", api.URL + "/",
		// resultsapitest's write token has the admin scope and stands in for the
		// matcher's service-account token with the rematch scope: resultsapitest's
		// auth cannot run a TokenReview.
		"--results-api-token-file", writeFile(t, "rematch-token", api.Token),
		"--nats-url", natsURL, "--nats-user", string(eventsv1.UserMatcher),
		"--nats-password-file", writeFile(t, "nats-pw", pw[eventsv1.UserMatcher]),
	}
	s := startServe(t, args)

	rc, err := nats.Connect(natsURL, nats.UserInfo(string(eventsv1.UserReader), pw[eventsv1.UserReader]))
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	js, err := jetstream.New(rc)
	if err != nil {
		t.Fatal(err)
	}
	r := &streamReader{t: t, js: js}

	// DB 1 is the DB the fixtures were matched with: nothing changes.
	uploadDB(t, s.base, admin, advisory.Real, built)
	evs := waitEvents(t, r, 1, 1)
	if p := vulnDBUpdated(t, ofType(evs, eventsv1.TypeVulnDBUpdated)[0]); !p.Built.Equal(built) || p.Source != events.SourceImport || p.PreviousBuilt != nil ||
		p.GrypeVersion != "0.121.2" {
		t.Errorf("first vulndb.updated %+v", p)
	}
	checkDone(t, ofType(evs, eventsv1.TypeRematchDone)[0], built, 5, 0, 5, 0)

	// DB 2 changes three of the five reports.
	db2 := built.Add(24 * time.Hour)
	uploadDB(t, s.base, admin, changedAdvisories(), db2)
	evs = waitEvents(t, r, 2, 2)
	if p := vulnDBUpdated(t, ofType(evs, eventsv1.TypeVulnDBUpdated)[1]); !p.Built.Equal(db2) || p.PreviousBuilt == nil || !p.PreviousBuilt.Equal(built) {
		t.Errorf("second vulndb.updated %+v", p)
	}
	checkDone(t, ofType(evs, eventsv1.TypeRematchDone)[1], db2, 5, 3, 2, 0)
	wantChanged := digestsOf(reps, changedByDB2)
	if got := rematchChanges(t, api); len(got) != 1 || !slices.Equal(got[db2.Format(time.RFC3339)], wantChanged) {
		t.Errorf("results-api rematch changes %v, want %s: %v", got, db2.Format(time.RFC3339), wantChanged)
	}

	// NATS down: DB 3 (DB 1's advisories again) is activated and its pass
	// runs; the events wait in the pending file, across a restart.
	ns.Stop()
	db3 := built.Add(48 * time.Hour)
	uploadDB(t, s.base, admin, advisory.Real, db3)
	pendingDir := filepath.Join(dataDir, eventsDir)
	deadline := time.Now().Add(3 * time.Minute)
	for {
		ob, err := events.OpenOutbox(pendingDir)
		if err != nil {
			t.Fatal(err)
		}
		if p := ob.Pending(); len(p) == 2 {
			if p[0].Type != eventsv1.TypeVulnDBUpdated || p[1].Type != eventsv1.TypeRematchDone {
				t.Fatalf("pending %s, %s", p[0].Type, p[1].Type)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pending events: %d, want 2", len(ob.Pending()))
		}
		time.Sleep(200 * time.Millisecond)
	}
	s.stop()
	s = startServe(t, args)
	// NATS comes back only once the restarted matcher has tried and
	// failed to publish (checked again in checkMetricsAfterRestart).
	waitPublishFailure(t, s.base)
	if err := ns.Restart(); err != nil {
		t.Fatal(err)
	}
	evs = waitEvents(t, r, 3, 3)
	if p := vulnDBUpdated(t, ofType(evs, eventsv1.TypeVulnDBUpdated)[2]); !p.Built.Equal(db3) || p.PreviousBuilt == nil || !p.PreviousBuilt.Equal(db2) {
		t.Errorf("third vulndb.updated %+v", p)
	}
	checkDone(t, ofType(evs, eventsv1.TypeRematchDone)[2], db3, 5, 3, 2, 0)
	got := rematchChanges(t, api)
	if !slices.Equal(got[db3.Format(time.RFC3339)], wantChanged) || !slices.Equal(got[db2.Format(time.RFC3339)], wantChanged) || len(got) != 2 {
		t.Errorf("results-api rematch changes %v", got)
	}
	ob, err := events.OpenOutbox(pendingDir)
	if err != nil || len(ob.Pending()) != 0 {
		t.Errorf("pending events after publishing: %v %v", ob.Pending(), err)
	}

	// The matcher's metrics saw it all (since the restart: DB 3's pass was
	// found finished, so nothing was re-matched again).
	checkMetricsAfterRestart(t, s.base)

	// A crash that lost the pending file's record of both events (as one
	// between the activation, or the pass's last progress save, and the
	// record would): the next start records them again from the active DB
	// and the finished progress, and JetStream drops the republished
	// duplicates by Nats-Msg-Id.
	s.stop()
	if err := os.Remove(filepath.Join(pendingDir, events.PendingFile)); err != nil {
		t.Fatal(err)
	}
	s = startServe(t, args)
	deadline = time.Now().Add(time.Minute)
	for {
		ob, err := events.OpenOutbox(pendingDir)
		if err != nil {
			t.Fatal(err)
		}
		// The two events are recorded one after the other: wait for both,
		// published (nothing pending), not for the first state that has
		// a pending file.
		if _, err := os.Stat(filepath.Join(pendingDir, events.PendingFile)); err == nil && len(ob.Pending()) == 0 &&
			ob.Has(ofType(evs, eventsv1.TypeVulnDBUpdated)[2].ID) && ob.Has(ofType(evs, eventsv1.TypeRematchDone)[2].ID) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the restart did not republish DB 3's events")
		}
		time.Sleep(100 * time.Millisecond)
	}
	waitEvents(t, r, 3, 3)
	s.stop()
}

// publishFailuresLine starts the metric line of failed vulndb.updated
// publishes.
const publishFailuresLine = `crowsnest_events_publish_failures_total{subject="crowsnest.vulndb.updated"} `

// waitPublishFailure waits (up to a minute) until the matcher at base has
// counted a failed vulndb.updated publish.
func waitPublishFailure(t *testing.T, base string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := http.Get(base + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(body), publishFailuresLine) && !strings.Contains(string(body), publishFailuresLine+"0\n") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the restarted matcher counted no failed publish with NATS down")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func checkMetricsAfterRestart(t *testing.T, base string) {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`crowsnest_rematch_reports_total{result="changed"} 0`,
		"crowsnest_rematch_in_progress 0",
		"crowsnest_events_pending 0",
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	// The restarted matcher found NATS down: its failures were counted.
	if strings.Contains(string(body), publishFailuresLine+"0\n") || !strings.Contains(string(body), publishFailuresLine) {
		t.Error("no publish failure counted while NATS was down")
	}
}
