package natstest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	"github.com/crowsnest-dev/crowsnest/test/support/natstest"
)

// violations collects the permission violations the server reports to one
// connection. A refused publish gets no reply at all: the server answers
// with an asynchronous -ERR naming the subject, which is the proof.
type violations struct {
	mu   sync.Mutex
	seen []string
}

func (v *violations) handler(_ *nats.Conn, _ *nats.Subscription, err error) {
	if errors.Is(err, nats.ErrPermissionViolation) {
		v.mu.Lock()
		v.seen = append(v.seen, err.Error())
		v.mu.Unlock()
	}
}

// waitFor reports whether a violation naming subject arrives within 2 s.
func (v *violations) waitFor(subject string) bool {
	want := fmt.Sprintf("%q", subject)
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		v.mu.Lock()
		for _, s := range v.seen {
			if strings.Contains(s, want) {
				v.mu.Unlock()
				return true
			}
		}
		v.mu.Unlock()
	}
	return false
}

// actor is one NATS user, connected, with its violations.
type actor struct {
	user eventsv1.User
	nc   *nats.Conn
	js   jetstream.JetStream
	v    *violations
}

func connectActor(t *testing.T, url string, u eventsv1.User, pw map[eventsv1.User]string) *actor {
	t.Helper()
	v := &violations{}
	nc, err := nats.Connect(url, nats.UserInfo(string(u), pw[u]), nats.MaxReconnects(0), nats.ErrorHandler(v.handler))
	if err != nil {
		t.Fatalf("%s connect: %v", u, err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return &actor{user: u, nc: nc, js: js, v: v}
}

// refused sends one raw JetStream API request (or an ack) as a and fails
// the test unless the server refuses it as a permissions violation. A reply
// of any kind, an error status included, means the server let it through.
func (a *actor) refused(t *testing.T, subject string, body []byte) {
	t.Helper()
	msg, err := a.nc.Request(subject, body, 250*time.Millisecond)
	if err == nil {
		t.Errorf("%s: %s was answered (%q %q), want a permissions violation", a.user, subject, msg.Header.Get("Status"), msg.Data)
		return
	}
	if !a.v.waitFor(subject) {
		t.Errorf("%s: %s got no permissions violation (request error %v)", a.user, subject, err)
	}
}

// published publishes without waiting for a reply (acks have none) and
// fails the test unless the server refuses it.
func (a *actor) publishRefused(t *testing.T, subject string) {
	t.Helper()
	if err := a.nc.Publish(subject, nil); err != nil {
		t.Fatal(err)
	}
	if err := a.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	if !a.v.waitFor(subject) {
		t.Errorf("%s: publishing %s got no permissions violation", a.user, subject)
	}
}

// serviceConsumer is a durable consumer a service runs, created by its owner
// as the service creates it.
type serviceConsumer struct {
	owner   eventsv1.User
	name    string
	filters []string
	single  bool // set as FilterSubject (nats.go puts it in the create subject), not FilterSubjects
}

// serviceConsumers are the contract's ServiceConsumers with their owners,
// configured as the services configure them.
func serviceConsumers() []serviceConsumer {
	return []serviceConsumer{
		{eventsv1.UserResultsAPI, eventsv1.ConsumerResultsAPIScans, []string{eventsv1.SubjectImageNeeded, eventsv1.SubjectJobDone}, false},
		{eventsv1.UserResultsAPI, eventsv1.ConsumerResultsAPIInventory, []string{eventsv1.SubjectInventorySnapshot}, false},
		{eventsv1.UserResultsAPI, eventsv1.ConsumerResultsAPIVulnDB, []string{eventsv1.SubjectVulnDBUpdated}, false},
		{eventsv1.UserOperator, eventsv1.ConsumerOperatorReportDeleted, []string{eventsv1.SubjectReportDeleted}, true},
		{eventsv1.UserNotifier, eventsv1.ConsumerNotifier, []string{eventsv1.SubjectFindingsChanged, eventsv1.SubjectInventorySnapshot, eventsv1.SubjectJobDone}, false},
	}
}

func consumerConfig(c serviceConsumer) jetstream.ConsumerConfig {
	cfg := jetstream.ConsumerConfig{Durable: c.name, AckPolicy: jetstream.AckExplicitPolicy, DeliverPolicy: jetstream.DeliverAllPolicy}
	if c.single {
		cfg.FilterSubject = c.filters[0]
	} else {
		cfg.FilterSubjects = c.filters
	}
	return cfg
}

// authStack starts a server with every contract user, the stream (created
// by its owner), every service's durable consumer (created by its own
// user) and one event on each consumer's subjects.
func authStack(t *testing.T) (url string, pw map[eventsv1.User]string, actors map[eventsv1.User]*actor) {
	t.Helper()
	pw = map[eventsv1.User]string{}
	for _, u := range eventsv1.Users() {
		pw[u] = "pw-" + string(u)
	}
	_, url = natstest.StartAuthT(t, pw)
	actors = map[eventsv1.User]*actor{}
	for _, u := range eventsv1.Users() {
		actors[u] = connectActor(t, url, u, pw)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := eventsv1.EnsureStream(ctx, actors[eventsv1.StreamOwner].js); err != nil {
		t.Fatalf("%s (the stream's owner) ensures the stream: %v", eventsv1.StreamOwner, err)
	}
	for _, c := range serviceConsumers() {
		if _, err := actors[c.owner].js.CreateOrUpdateConsumer(ctx, eventsv1.StreamName, consumerConfig(c)); err != nil {
			t.Fatalf("%s creates its consumer %s: %v", c.owner, c.name, err)
		}
	}
	for _, p := range []struct {
		by      eventsv1.User
		subject string
	}{
		{eventsv1.UserOperator, eventsv1.SubjectImageNeeded}, {eventsv1.UserOperator, eventsv1.SubjectJobDone},
		{eventsv1.UserOperator, eventsv1.SubjectInventorySnapshot}, {eventsv1.UserResultsAPI, eventsv1.SubjectReportDeleted},
		{eventsv1.UserResultsAPI, eventsv1.SubjectFindingsChanged}, {eventsv1.UserMatcher, eventsv1.SubjectVulnDBUpdated},
	} {
		mustPublish(ctx, t, actors[p.by].js, p.subject)
	}
	return url, pw, actors
}
