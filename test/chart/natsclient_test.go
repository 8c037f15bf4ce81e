package charttest

import (
	"context"
	"path"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// natsAuthEnv are the variables through which the binaries take NATS
// credentials (api/events/v1 Credentials).
var natsAuthEnv = []string{"CROWSNEST_NATS_USER", "CROWSNEST_NATS_PASSWORD_FILE", "CROWSNEST_NATS_CREDS", "CROWSNEST_NATS_NKEY_FILE"}

// natsClient is what one component must get: its NATS env and the Secret
// key behind the file that env names.
type natsClient struct {
	env         map[string]string // of natsAuthEnv; absent = unset
	secret, key string            // the Secret and key mounted at the file; "" = no mount
}

// TestNATSClientCredentials: the operator and results-api connect as their
// own users, with the password (or .creds file) in a file mounted read-only,
// mode 0440, from exactly one key of a Secret, and never as an env value.
func TestNATSClientCredentials(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const pwFile, credsFile = "/var/run/secrets/crowsnest/nats/password", "/var/run/secrets/crowsnest/nats/nats.creds"
	bundled := func(secret string) map[string]natsClient {
		return map[string]natsClient{
			"Deployment/crowsnest-operator": {env: map[string]string{"CROWSNEST_NATS_USER": "operator", "CROWSNEST_NATS_PASSWORD_FILE": pwFile},
				secret: secret, key: "operator"},
			"Deployment/crowsnest-results-api": {env: map[string]string{"CROWSNEST_NATS_USER": "results-api", "CROWSNEST_NATS_PASSWORD_FILE": pwFile},
				secret: secret, key: "results-api"},
		}
	}
	for _, tc := range []struct {
		name string
		args []string
		want map[string]natsClient
	}{
		{name: "bundled NATS, generated passwords", want: bundled("crowsnest-nats-users")},
		{name: "bundled NATS, existing Secret", args: []string{"--set", "global.nats.users.existingSecret=my-nats-users"}, want: bundled("my-nats-users")},
		{name: "external NATS with credentials", args: []string{"-f", "test/chart/testdata/values-external-nats-credentials.yaml"}, want: map[string]natsClient{
			"Deployment/crowsnest-operator": {env: map[string]string{"CROWSNEST_NATS_CREDS": credsFile}, secret: "crowsnest-operator-nats", key: "nats.creds"},
			"Deployment/crowsnest-results-api": {env: map[string]string{"CROWSNEST_NATS_USER": "crowsnest-results-api", "CROWSNEST_NATS_PASSWORD_FILE": pwFile},
				secret: "crowsnest-results-api-nats", key: "pw"},
		}},
		{name: "external NATS without credentials", args: []string{"-f", "test/chart/testdata/values-external.yaml"}, want: map[string]natsClient{
			"Deployment/crowsnest-operator": {}, "Deployment/crowsnest-results-api": {},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := Template(ctx, repoRoot, releaseNS, withScan(tc.args...)...)
			if err != nil {
				t.Fatal(err)
			}
			pods, err := PodTemplates(objs)
			if err != nil {
				t.Fatal(err)
			}
			seen := 0
			for _, p := range pods {
				want, ok := tc.want[p.Object]
				if !ok {
					continue
				}
				seen++
				checkNATSClient(t, p, want)
			}
			if seen != len(tc.want) {
				t.Errorf("found %d of the workloads %v", seen, tc.want)
			}
		})
	}
}

func checkNATSClient(t *testing.T, p PodTemplate, want natsClient) {
	t.Helper()
	c := p.Spec.Containers[0]
	got := map[string]string{}
	for _, e := range c.Env {
		for _, name := range natsAuthEnv {
			if e.Name != name {
				continue
			}
			if e.ValueFrom != nil {
				t.Errorf("%s env %s is not a plain file path: %+v", p.Object, e.Name, e.ValueFrom)
			}
			got[e.Name] = e.Value
		}
	}
	if len(got) != len(want.env) {
		t.Errorf("%s NATS env = %v, want %v", p.Object, got, want.env)
	}
	for k, v := range want.env {
		if got[k] != v {
			t.Errorf("%s env %s = %q, want %q", p.Object, k, got[k], v)
		}
	}
	file := got["CROWSNEST_NATS_PASSWORD_FILE"] + got["CROWSNEST_NATS_CREDS"]
	var mount *corev1.VolumeMount
	for i, m := range c.VolumeMounts {
		if m.Name == "nats-credentials" {
			mount = &c.VolumeMounts[i]
		}
	}
	if want.secret == "" {
		if mount != nil {
			t.Errorf("%s mounts NATS credentials, want none", p.Object)
		}
		return
	}
	if mount == nil || !mount.ReadOnly || path.Dir(file) != mount.MountPath {
		t.Fatalf("%s: %s is not on a read-only nats-credentials mount (%+v)", p.Object, file, mount)
	}
	for _, v := range p.Spec.Volumes {
		if v.Name != mount.Name {
			continue
		}
		s := v.Secret
		if s == nil || s.SecretName != want.secret || len(s.Items) != 1 || s.Items[0].Key != want.key || s.Items[0].Path != path.Base(file) {
			t.Errorf("%s volume %s = %+v, want only key %s of Secret %s as %s", p.Object, v.Name, v.VolumeSource, want.key, want.secret, path.Base(file))
		} else if s.DefaultMode == nil || *s.DefaultMode != 0o440 {
			t.Errorf("%s volume %s mode = %v, want 0440", p.Object, v.Name, s.DefaultMode)
		}
	}
	// 0440 files belong to root and the fsGroup: without one the
	// non-root process could not read its password.
	if p.Spec.SecurityContext == nil || p.Spec.SecurityContext.FSGroup == nil {
		t.Errorf("%s has no fsGroup: its NATS credential file (0440) would be unreadable", p.Object)
	}
}
