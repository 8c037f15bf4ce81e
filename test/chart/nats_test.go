package charttest

import (
	"context"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/conf"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	"github.com/crowsnest-dev/crowsnest/helm/contract/natsperm"
)

// TestNATSPermissionsFile: the chart's permissions.json is what the
// generator writes from api/events/v1 today (make generate-chart).
func TestNATSPermissionsFile(t *testing.T) {
	want, err := natsperm.Generate()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(repoRoot, natsperm.Path))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("%s is stale: run make generate-chart", natsperm.Path)
	}
}

// TestBundledNATSAuthorization renders the bundled NATS's configuration,
// checks that its users are exactly the contract's (eventsv1.ServerAuthorization
// with the same passwords, compared after nats-server's own parser), then
// runs a real nats-server with the rendered file and plays the attacker: an
// anonymous client and a wrong password are refused, and reader cannot
// publish an event, while the operator can.
func TestBundledNATSAuthorization(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, tc := range []struct {
		name     string
		args     []string
		existing string // global.nats.users.existingSecret
	}{
		{name: "generated passwords"},
		{name: "passwords from an existing Secret", args: []string{"--set", "global.nats.users.existingSecret=my-nats-users"}, existing: "my-nats-users"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := Template(ctx, repoRoot, releaseNS, withScan(tc.args...)...)
			if err != nil {
				t.Fatal(err)
			}
			config := secretData(t, objs, "crowsnest-nats-config")["nats.conf"]
			if config == "" {
				t.Fatal("Secret crowsnest-nats-config has no nats.conf")
			}
			for _, o := range objs {
				if o.GetKind() == "ConfigMap" && o.GetName() == "crowsnest-nats" {
					t.Error("the NATS configuration is still rendered as a ConfigMap")
				}
			}
			passwords := map[eventsv1.User]string{}
			if tc.existing == "" {
				for u, pw := range secretData(t, objs, "crowsnest-nats-users") {
					passwords[eventsv1.User(u)] = pw
				}
			} else {
				if hasObject(objs, "Secret", "crowsnest-nats-users") {
					t.Error("a users Secret was generated although global.nats.users.existingSecret is set")
				}
				// The server reads each password from the environment, set
				// from the existing Secret: do what the kubelet would.
				env := natsServerEnv(t, objs)
				for _, u := range eventsv1.Users() {
					passwords[u] = "Pw" + hex.EncodeToString([]byte("existing-"+string(u))) // letters and digits, as documented
				}
				var refs []string
				for _, e := range env {
					ref := e.ValueFrom.SecretKeyRef
					if ref.Name != tc.existing {
						t.Errorf("nats env %s from Secret %s, want %s", e.Name, ref.Name, tc.existing)
					}
					refs = append(refs, ref.Key)
					t.Setenv(e.Name, passwords[eventsv1.User(ref.Key)])
				}
				if want := userNames(); !slices.Equal(sorted(refs), want) {
					t.Errorf("nats env reads keys %v of the existing Secret, want %v", sorted(refs), want)
				}
			}
			if got, want := sortedKeys(passwords), userNames(); !slices.Equal(got, want) {
				t.Fatalf("passwords for %v, want every contract user %v", got, want)
			}
			for u, pw := range passwords {
				if len(pw) < 24 {
					t.Errorf("password of %s is %d characters, want 24 or more", u, len(pw))
				}
			}

			checkAuthorization(t, config, passwords)
			url := startNATS(t, config)
			playAttacker(ctx, t, url, passwords)
		})
	}
}

// checkAuthorization compares the rendered authorization block with the
// contract's, both parsed by nats-server's configuration parser.
func checkAuthorization(t *testing.T, config string, passwords map[eventsv1.User]string) {
	t.Helper()
	rendered, err := conf.Parse(config)
	if err != nil {
		t.Fatalf("parse rendered nats.conf: %v", err)
	}
	for _, key := range []string{"no_auth_user", "accounts", "operator", "resolver"} {
		if _, ok := rendered[key]; ok {
			t.Errorf("rendered nats.conf sets %s", key)
		}
	}
	contractText, err := eventsv1.ServerAuthorization(passwords)
	if err != nil {
		t.Fatal(err)
	}
	contract, err := conf.Parse(contractText)
	if err != nil {
		t.Fatal(err)
	}
	got, want := usersOf(t, rendered), usersOf(t, contract)
	if len(got) != len(eventsv1.Users()) {
		t.Errorf("rendered nats.conf has %d users, want %d", len(got), len(eventsv1.Users()))
	}
	if !reflect.DeepEqual(got, want) {
		for u, w := range want {
			g, _ := got[u].(map[string]any)
			w := w.(map[string]any)
			if !reflect.DeepEqual(g["permissions"], w["permissions"]) {
				t.Errorf("user %s permissions:\nrendered %v\ncontract %v", u, g["permissions"], w["permissions"])
			}
			if g["password"] != w["password"] {
				t.Errorf("user %s: the rendered password is not the one in its Secret", u) // values not logged
			}
		}
		t.Error("the rendered users differ from eventsv1.ServerAuthorization")
	}
}

// usersOf returns authorization.users by user name; the block must hold
// nothing else (no token, no default user or permissions).
func usersOf(t *testing.T, parsed map[string]any) map[string]any {
	t.Helper()
	auth, ok := parsed["authorization"].(map[string]any)
	if !ok {
		t.Fatal("no authorization block")
	}
	if keys := sortedKeys(auth); !slices.Equal(keys, []string{"users"}) {
		t.Errorf("authorization block sets %v, want only users", keys)
	}
	list, _ := auth["users"].([]any)
	out := map[string]any{}
	for _, entry := range list {
		m, _ := entry.(map[string]any)
		name, _ := m["user"].(string)
		if _, dup := out[name]; dup {
			t.Errorf("user %q twice", name)
		}
		out[name] = m
	}
	return out
}

// startNATS runs a real nats-server with the rendered configuration, on a
// loopback port and a temporary store instead of the Pod's.
func startNATS(t *testing.T, config string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "nats.conf")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(path)
	if err != nil {
		t.Fatalf("nats-server refuses the rendered configuration: %v", err)
	}
	if !opts.JetStream {
		t.Error("rendered configuration does not enable JetStream")
	}
	opts.Host, opts.Port, opts.HTTPPort = "127.0.0.1", server.RANDOM_PORT, 0
	opts.StoreDir = t.TempDir()
	opts.NoLog, opts.NoSigs = true, true
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	t.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready after 10s")
	}
	return s.ClientURL()
}

func playAttacker(ctx context.Context, t *testing.T, url string, passwords map[eventsv1.User]string) {
	t.Helper()
	if nc, err := nats.Connect(url, nats.MaxReconnects(0)); err == nil {
		nc.Close()
		t.Fatal("an anonymous client connected to the bundled NATS")
	} else if !errors.Is(err, nats.ErrAuthorization) {
		t.Errorf("anonymous connect: %v, want an authorization violation", err)
	}
	if nc, err := nats.Connect(url, nats.UserInfo(string(eventsv1.UserReader), passwords[eventsv1.UserOperator]), nats.MaxReconnects(0)); err == nil {
		nc.Close()
		t.Fatal("reader connected with the operator's password")
	}

	operator := jetStreamAs(t, url, eventsv1.UserOperator, passwords)
	stream, err := eventsv1.EnsureStream(ctx, operator)
	if err != nil {
		t.Fatalf("operator may create the stream: %v", err)
	}
	if _, err := operator.Publish(ctx, eventsv1.SubjectJobDone, []byte(`{}`)); err != nil {
		t.Fatalf("operator may publish %s: %v", eventsv1.SubjectJobDone, err)
	}

	reader := jetStreamAs(t, url, eventsv1.UserReader, passwords)
	pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
	_, err = reader.Publish(pctx, eventsv1.SubjectJobDone, []byte(`{"forged":true}`))
	pcancel()
	if err == nil {
		t.Errorf("reader published %s", eventsv1.SubjectJobDone)
	}
	dctx, dcancel := context.WithTimeout(ctx, 2*time.Second)
	if err := reader.DeleteStream(dctx, eventsv1.StreamName); err == nil {
		t.Error("reader deleted the stream")
	}
	dcancel()

	// What reader is for: reading every event through its own consumer.
	rs, err := reader.Stream(ctx, eventsv1.StreamName)
	if err != nil {
		t.Fatalf("reader may look at the stream: %v", err)
	}
	c, err := rs.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "my-tool", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatalf("reader may create its own consumer: %v", err)
	}
	batch, err := c.Fetch(2, jetstream.FetchMaxWait(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	read := 0
	for m := range batch.Messages() {
		read++
		if string(m.Data()) != `{}` {
			t.Errorf("reader read %s, want only the operator's event", m.Data())
		}
		_ = m.Ack()
	}
	info, err := stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if read != 1 || info.State.Msgs != 1 {
		t.Errorf("reader read %d events and the stream holds %d, want exactly the operator's 1", read, info.State.Msgs)
	}
}

func jetStreamAs(t *testing.T, url string, u eventsv1.User, passwords map[eventsv1.User]string) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(url, nats.UserInfo(string(u), passwords[u]), nats.MaxReconnects(0),
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {})) // permission violations are expected
	if err != nil {
		t.Fatalf("%s connect: %v", u, err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// natsServerEnv returns the nats-server container's environment; every
// variable must come from a Secret.
func natsServerEnv(t *testing.T, objs []*unstructured.Unstructured) []corev1.EnvVar {
	t.Helper()
	pods, err := PodTemplates(objs)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		if p.Object != "StatefulSet/crowsnest-nats" {
			continue
		}
		env := p.Spec.Containers[0].Env
		for _, e := range env {
			if e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
				t.Fatalf("nats env %s is not from a Secret: %+v", e.Name, e)
			}
		}
		return env
	}
	t.Fatal("StatefulSet/crowsnest-nats not rendered")
	return nil
}

// secretData returns a rendered Secret's decoded data.
func secretData(t *testing.T, objs []*unstructured.Unstructured, name string) map[string]string {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() != "Secret" || o.GetName() != name {
			continue
		}
		data, _, _ := unstructured.NestedStringMap(o.Object, "data")
		out := map[string]string{}
		for k := range data {
			out[k] = secretValue(t, o, k)
		}
		return out
	}
	t.Fatalf("Secret %s not rendered", name)
	return nil
}

func hasObject(objs []*unstructured.Unstructured, kind, name string) bool {
	return slices.ContainsFunc(objs, func(o *unstructured.Unstructured) bool { return o.GetKind() == kind && o.GetName() == name })
}

func userNames() []string {
	var out []string
	for _, u := range eventsv1.Users() {
		out = append(out, string(u))
	}
	return sorted(out)
}

func sortedKeys[K ~string, V any](m map[K]V) []string {
	var out []string
	for k := range m {
		out = append(out, string(k))
	}
	return sorted(out)
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}
