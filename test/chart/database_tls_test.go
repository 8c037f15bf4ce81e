package charttest

import (
	"context"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// TestResultsAPIDatabaseTLS: global.database.tls makes results-api connect
// to an external Postgres with sslmode verify-full against the given CA:
// PGSSLMODE and PGSSLROOTCERT (pgx reads libpq's variables) and the CA
// mounted from its Secret at exactly that path. Without it nothing
// changes; the bundled Postgres (no TLS) refuses it; the schema refuses
// modes that do not encrypt.
func TestResultsAPIDatabaseTLS(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	external := withScan("-f", "test/chart/testdata/values-external.yaml")
	ext := func(set ...string) []string { return slices.Concat(external, set) }

	env, mounts, vols := resultsAPIDatabase(ctx, t, ext(
		"--set", "global.database.tls.mode=verify-full",
		"--set", "global.database.tls.caSecret.name=crowsnest-db-ca")...)
	if env["PGSSLMODE"] != "verify-full" {
		t.Errorf("PGSSLMODE = %q, want verify-full", env["PGSSLMODE"])
	}
	root := env["PGSSLROOTCERT"]
	dir, ok := mounts["database-ca"]
	if !ok || root != path.Join(dir, "ca.crt") {
		t.Errorf("PGSSLROOTCERT %q, database-ca mounted at %q (%v): want the CA file inside the mount", root, dir, ok)
	}
	v, ok := vols["database-ca"]
	want := corev1.KeyToPath{Key: "ca.crt", Path: "ca.crt"}
	if !ok || v.Secret == nil || v.Secret.SecretName != "crowsnest-db-ca" || len(v.Secret.Items) != 1 || v.Secret.Items[0] != want {
		t.Errorf("database-ca volume %+v, want Secret crowsnest-db-ca key ca.crt as ca.crt", v)
	}

	// Another key of the CA Secret, no CA (system roots), no TLS at all.
	_, _, vols = resultsAPIDatabase(ctx, t, ext(
		"--set", "global.database.tls.mode=verify-full",
		"--set", "global.database.tls.caSecret.name=crowsnest-db", "--set", "global.database.tls.caSecret.key=root.pem")...)
	if v := vols["database-ca"]; v.Secret == nil || v.Secret.Items[0].Key != "root.pem" || v.Secret.Items[0].Path != "ca.crt" {
		t.Errorf("database-ca volume with key root.pem: %+v", v)
	}
	env, mounts, _ = resultsAPIDatabase(ctx, t, ext("--set", "global.database.tls.mode=verify-full")...)
	if _, ok := env["PGSSLROOTCERT"]; ok || env["PGSSLMODE"] != "verify-full" || mounts["database-ca"] != "" {
		t.Errorf("verify-full without a CA Secret: env %v mounts %v", env, mounts)
	}
	env, mounts, _ = resultsAPIDatabase(ctx, t, external...)
	if _, ok := env["PGSSLMODE"]; ok || mounts["database-ca"] != "" {
		t.Errorf("no tls values: env %v mounts %v, want neither", env, mounts)
	}

	for name, args := range map[string][]string{
		"bundled Postgres": withScan("--set", "global.database.tls.mode=verify-full"),
		"mode disable":     ext("--set", "global.database.tls.mode=disable"),
		"mode prefer":      ext("--set", "global.database.tls.mode=prefer"),
	} {
		if _, err := Template(ctx, repoRoot, releaseNS, args...); err == nil {
			t.Errorf("%s: rendered, want a refusal", name)
		} else if name == "bundled Postgres" && !strings.Contains(err.Error(), "bundled Postgres serves none") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// resultsAPIDatabase renders the chart and returns results-api's
// container env (name -> value), volume mounts (name -> path) and volumes.
func resultsAPIDatabase(ctx context.Context, t *testing.T, args ...string) (map[string]string, map[string]string, map[string]corev1.Volume) {
	t.Helper()
	objs, err := Template(ctx, repoRoot, releaseNS, args...)
	if err != nil {
		t.Fatal(err)
	}
	pods, err := PodTemplates(objs)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		if p.Object != "Deployment/crowsnest-results-api" {
			continue
		}
		env, mounts, vols := map[string]string{}, map[string]string{}, map[string]corev1.Volume{}
		for _, e := range p.Spec.Containers[0].Env {
			env[e.Name] = e.Value
		}
		for _, m := range p.Spec.Containers[0].VolumeMounts {
			mounts[m.Name] = m.MountPath
		}
		for _, v := range p.Spec.Volumes {
			vols[v.Name] = v
		}
		return env, mounts, vols
	}
	t.Fatal("results-api Deployment not rendered")
	return nil, nil, nil
}
