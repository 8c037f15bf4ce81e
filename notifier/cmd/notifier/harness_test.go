package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	"github.com/crowsnest-dev/crowsnest/notifier/internal/metrics"
	"github.com/crowsnest-dev/crowsnest/notifier/internal/state"
	"github.com/crowsnest-dev/crowsnest/test/support/natstest"
)

// env is one test's world: a JetStream server configured with the
// contract's users and permissions (natstest.StartAuthT), the stream as
// the operator creates it, and publishers with the operator's and
// results-api's credentials. The notifier connects as the notifier user.
type env struct {
	t       *testing.T
	url     string
	dir     string
	pwFile  string
	op, api jetstream.JetStream
	ctx     context.Context
}

// testConsumer is the durable consumer the tests use: the contract's, the
// --consumer default.
const testConsumer = eventsv1.ConsumerNotifier

var passwords = map[eventsv1.User]string{
	eventsv1.UserOperator: "pw-operator", eventsv1.UserResultsAPI: "pw-results-api", eventsv1.UserNotifier: "pw-notifier", eventsv1.UserReader: "pw-reader",
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := newEnvWithoutStream(t)
	if _, err := eventsv1.EnsureStream(e.ctx, e.op); err != nil {
		t.Fatal(err)
	}
	return e
}

// newEnvWithoutStream is newEnv before anyone created the events stream
// (in a cluster, before the operator or results-api first started).
func newEnvWithoutStream(t *testing.T) *env {
	t.Helper()
	_, url := natstest.StartAuthT(t, passwords)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	e := &env{t: t, url: url, dir: t.TempDir(), ctx: ctx}
	e.pwFile = e.write("nats-password", passwords[eventsv1.UserNotifier])
	e.op = e.js(eventsv1.UserOperator)
	e.api = e.js(eventsv1.UserResultsAPI)
	return e
}

func (e *env) js(u eventsv1.User) jetstream.JetStream {
	e.t.Helper()
	nc, err := nats.Connect(e.url, nats.UserInfo(string(u), passwords[u]), nats.MaxReconnects(0))
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		e.t.Fatal(err)
	}
	return js
}

func (e *env) write(name, content string) string {
	e.t.Helper()
	p := filepath.Join(e.dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		e.t.Fatal(err)
	}
	return p
}

// options are the notifier's flags for this env and a config file.
func (e *env) options(config string, extra ...string) Options {
	e.t.Helper()
	args := append([]string{"--config", e.write("config.yaml", config), "--nats-url", e.url, "--nats-user", "notifier",
		"--nats-password-file", e.pwFile, "--retry-min-backoff", "5ms", "--retry-max-backoff", "20ms",
		"--dashboard-url", "https://crowsnest.example"}, extra...)
	o, err := parse(args, func(string) string { return "" }, io.Discard)
	if err != nil {
		e.t.Fatal(err)
	}
	return o
}

// notifier is an in-process notifier.
type notifier struct {
	m      *metrics.Metrics
	stdout *syncBuffer
	stderr *syncBuffer // its log
	addr   string      // its /metrics, /healthz and /readyz
	stop   func() error
}

// start runs the notifier until the test stops it (or ends).
func (e *env) start(o Options) *notifier {
	e.t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		e.t.Fatal(err)
	}
	n := &notifier{m: metrics.New(), stdout: &syncBuffer{}, stderr: &syncBuffer{}, addr: ln.Addr().String()}
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan error, 1)
	go func() { done <- run(ctx, o, deps{stdout: n.stdout, stderr: n.stderr, listener: ln, metrics: n.m}) }()
	var once sync.Once
	var runErr error
	n.stop = func() error {
		once.Do(func() { cancel(); runErr = <-done })
		return runErr
	}
	e.t.Cleanup(func() {
		err := n.stop()
		if !e.t.Failed() {
			return
		}
		// What the notifier said, for a failure that waited on it (its
		// log is otherwise kept only in memory), and how its run ended.
		log := n.stderr.String()
		if len(log) > 16<<10 {
			log = "…" + log[len(log)-16<<10:]
		}
		e.t.Logf("the notifier's run ended with %v; its log:\n%s", err, log)
	})
	return n
}

// count reads a counter or gauge of the notifier's registry; labels are
// name=value pairs that must all match.
func (n *notifier) count(name string, labels ...string) float64 {
	mfs, _ := n.m.Registry.Gather()
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, lp := range m.GetLabel() {
					if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
						found = true
					}
				}
				if !found {
					continue metric
				}
			}
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return sum
}

// eventually polls cond (bounded: 30s) and fails the test with what.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// publish publishes a contract event as its producer would; msgID is the
// Nats-Msg-Id (normally the event id).
func (e *env) publish(js jetstream.JetStream, source, typ, id, msgID string, payload any) {
	e.t.Helper()
	ev, err := eventsv1.New(source, typ, id, "", time.Now(), payload)
	if err != nil {
		e.t.Fatal(err)
	}
	b, _ := json.Marshal(ev)
	subject, _ := eventsv1.SubjectFor(typ)
	if _, err := js.PublishMsg(e.ctx, &nats.Msg{Subject: subject, Data: b, Header: nats.Header{"Nats-Msg-Id": []string{msgID}}}); err != nil {
		e.t.Fatalf("publish %s: %v", subject, err)
	}
}

func digest(c byte) string { return "sha256:" + strings.Repeat(string(c), 64) }

// inventory publishes ns running digest d in Deployment web.
func (e *env) inventory(ns, d string, labels map[string]string) {
	e.t.Helper()
	s := eventsv1.InventorySnapshot{Namespace: ns, Labels: labels, Workloads: []eventsv1.InventoryWorkload{{
		Kind: eventsv1.KindDeployment, Name: "web", Containers: []eventsv1.InventoryContainer{{Name: "app", Image: "demo/app:1", Digest: d, Pods: 2}}}}}
	id := eventsv1.InventoryID(s)
	e.publish(e.op, eventsv1.SourceOperator, eventsv1.TypeInventorySnapshot, id, id, s)
}

// findings publishes a change of d adding the given critical CVEs.
func (e *env) findings(d string, changeID int64, cves ...string) string {
	e.t.Helper()
	p := eventsv1.FindingsChanged{ChangeID: changeID, Digest: d, Image: "registry.example/demo/app@" + d, Cause: eventsv1.CauseRematch, ChangedAt: time.Now()}
	for _, c := range cves {
		p.New = append(p.New, eventsv1.ChangedFinding{ID: c, Severity: "critical", Package: eventsv1.ChangedPackage{Name: "openssl", Version: "3.0.1", Type: "apk"}, FixedIn: []string{"3.0.9"}})
		p.NewCounts.Critical++
	}
	id := eventsv1.ID(eventsv1.TypeFindingsChanged, d, fmt.Sprint(changeID))
	e.publish(e.api, eventsv1.SourceResultsAPI, eventsv1.TypeFindingsChanged, id, id, p)
	return id
}

// store opens the notifier's state as the notifier user would.
func (e *env) store() *state.Store {
	e.t.Helper()
	s, err := state.Open(e.ctx, e.js(eventsv1.UserNotifier), 1<<20)
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

// endpoint is an httptest receiver that records what it accepted.
type endpoint struct {
	*httptest.Server
	mu       sync.Mutex
	bodies   [][]byte
	headers  []http.Header
	attempts int
	// handle, when set, answers instead (after the attempt is counted);
	// returning false means it answered and nothing was accepted.
	handle func(w http.ResponseWriter, r *http.Request, attempt int) bool
}

func newReceiver(t *testing.T) *endpoint {
	rc := &endpoint{}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		r.Body = io.NopCloser(bytes.NewReader(body))
		rc.mu.Lock()
		rc.attempts++
		attempt, h := rc.attempts, rc.handle
		rc.mu.Unlock()
		if h != nil && !h(w, r, attempt) {
			return
		}
		rc.mu.Lock()
		rc.bodies = append(rc.bodies, body)
		rc.headers = append(rc.headers, r.Header.Clone())
		rc.mu.Unlock()
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *endpoint) accepted() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.bodies)
}

func (rc *endpoint) body(i int) []byte {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.bodies[i]
}

// syncBuffer is a bytes.Buffer safe for the notifier's and the test's
// goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
