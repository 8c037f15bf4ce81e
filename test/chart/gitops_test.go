package charttest

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestGitOpsRenderIsStable: with every secret from an existing Secret, two
// helm template runs are byte for byte the same, as Argo CD and Flux need
// (lookup returns nothing there, so a generated secret would change on every
// sync). With the defaults they differ: the comparison can fail.
func TestGitOpsRenderIsStable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	render := func(args []string) []byte {
		base := []string{"template", "crowsnest", ChartDir, "--namespace", releaseNS, "--kube-version", KubeVersion}
		out, err := RunHelm(ctx, repoRoot, append(base, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if !bytes.Equal(render(gitOpsSecrets), render(gitOpsSecrets)) {
		t.Error("two renders with existing Secrets differ: something is still generated")
	}
	if bytes.Equal(render(scanTeamA), render(scanTeamA)) {
		t.Error("two renders with generated secrets are equal: the comparison proves nothing")
	}
}

// TestExistingSecretsReferenced: each workload reads its secret from the
// Secret and key named in values: the admin token, the Postgres password
// (the server) and URL (results-api), and the NATS users' passwords.
func TestExistingSecretsReferenced(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	objs, err := Template(ctx, repoRoot, releaseNS, gitOpsSecrets...)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetKind() == "Secret" && o.GetName() != "crowsnest-nats-config" {
			t.Errorf("Secret %s rendered; every secret comes from an existing one", o.GetName())
		}
	}
	pods := podsByObject(t, objs)
	for _, tt := range []struct {
		pod, volume, secret, key, path string
	}{
		{"Deployment/crowsnest-results-api", "admin-token", "crowsnest-admin-token", "admin", "token"},
		{"Deployment/crowsnest-results-api", "database", "crowsnest-postgres-auth", "uri", "url"},
		{"Deployment/crowsnest-results-api", "nats-credentials", "crowsnest-nats-passwords", "results-api", "password"},
		{"Deployment/crowsnest-operator", "nats-credentials", "crowsnest-nats-passwords", "operator", "password"},
		{"StatefulSet/crowsnest-postgres", "password", "crowsnest-postgres-auth", "pw", "password"},
	} {
		v := volume(t, pods[tt.pod], tt.volume)
		want := []corev1.KeyToPath{{Key: tt.key, Path: tt.path}}
		if v.Secret == nil || v.Secret.SecretName != tt.secret || !slices.Equal(v.Secret.Items, want) {
			t.Errorf("%s volume %s = %+v, want Secret %s key %s as %s", tt.pod, tt.volume, v.VolumeSource, tt.secret, tt.key, tt.path)
		}
	}
	// nats-server reads each password from the Secret through its environment.
	nats := pods["StatefulSet/crowsnest-nats"]
	refs := 0
	for _, e := range nats.Spec.Containers[0].Env {
		if r := e.ValueFrom; r != nil && r.SecretKeyRef != nil {
			refs++
			if r.SecretKeyRef.Name != "crowsnest-nats-passwords" {
				t.Errorf("NATS env %s from Secret %s, want crowsnest-nats-passwords", e.Name, r.SecretKeyRef.Name)
			}
		}
	}
	if refs != 5 {
		t.Errorf("NATS reads %d passwords from the Secret, want 5", refs)
	}
}

// podsByObject indexes the rendered Pod templates by Kind/name.
func podsByObject(t *testing.T, objs []*unstructured.Unstructured) map[string]PodTemplate {
	t.Helper()
	pods, err := PodTemplates(objs)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]PodTemplate{}
	for _, p := range pods {
		out[p.Object] = p
	}
	return out
}

// volume returns the named volume of p, failing the test without it.
func volume(t *testing.T, p PodTemplate, name string) corev1.Volume {
	t.Helper()
	for _, v := range p.Spec.Volumes {
		if v.Name == name {
			return v
		}
	}
	t.Fatalf("%s has no volume %s", p.Object, name)
	return corev1.Volume{}
}
