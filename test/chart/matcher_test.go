package charttest

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

const matcherURL = "http://crowsnest-matcher." + releaseNS + ".svc:8080/vulndb"

// TestVulnDBSource: scan Jobs get Grype's DB from the matcher by default
// (operator --vulndb-url), from a mirror with source=url, or download it
// themselves only when asked to (source=public); the matcher re-matches
// with its own ServiceAccount's projected token, which results-api accepts
// for the rematch scope, and only in tokenreview mode.
func TestVulnDBSource(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, tc := range []struct {
		name      string
		args      []string
		vulndbURL string // operator --vulndb-url; empty: none
		matcher   bool
		rematch   bool
	}{
		{"defaults: the matcher", scanTeamA, matcherURL, true, true},
		{"static mode: the matcher serves the DB but cannot re-match", withScan("--set", "resultsApi.auth.mode=static"), matcherURL, true, false},
		{"a mirror", withScan("--set", "global.vulnDB.source=url", "--set", "global.vulnDB.url=https://mirror.example/grype"), "https://mirror.example/grype", false, false},
		{"public", withScan("--set", "global.vulnDB.source=public"), "", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := Template(ctx, repoRoot, releaseNS, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			op := container(t, objs, "Deployment/crowsnest-operator")
			got := ""
			for _, a := range op.Args {
				if v, ok := strings.CutPrefix(a, "--vulndb-url="); ok {
					got = v
				}
			}
			if got != tc.vulndbURL {
				t.Errorf("operator --vulndb-url = %q, want %q", got, tc.vulndbURL)
			}
			api := container(t, objs, "Deployment/crowsnest-results-api")
			wantRematch := "--rematch-service-accounts=" + releaseNS + "/crowsnest-matcher"
			if slices.Contains(api.Args, wantRematch) != tc.rematch {
				t.Errorf("results-api args %q: %s present = %v, want %v", api.Args, wantRematch, !tc.rematch, tc.rematch)
			}
			pods, err := PodTemplates(objs)
			if err != nil {
				t.Fatal(err)
			}
			var m *PodTemplate
			for i := range pods {
				if pods[i].Object == "StatefulSet/crowsnest-matcher" {
					m = &pods[i]
				}
			}
			if (m != nil) != tc.matcher {
				t.Fatalf("matcher rendered = %v, want %v", m != nil, tc.matcher)
			}
			if m == nil {
				return
			}
			checkMatcherPod(t, m, tc.rematch)
		})
	}
}

func checkMatcherPod(t *testing.T, m *PodTemplate, rematch bool) {
	t.Helper()
	if m.Spec.AutomountServiceAccountToken == nil || *m.Spec.AutomountServiceAccountToken {
		t.Error("matcher mounts an API token")
	}
	c := m.Spec.Containers[0]
	want := []string{"serve", "--listen=:8080", "--admin-token-file=/var/run/secrets/crowsnest/admin-token/token"}
	if rematch {
		want = append(want, "--results-api-url=http://crowsnest-results-api."+releaseNS+".svc",
			"--results-api-token-file=/var/run/secrets/crowsnest/results-api/token")
	}
	for _, a := range want {
		if !slices.Contains(c.Args, a) {
			t.Errorf("matcher args %q lack %s", c.Args, a)
		}
	}
	if !rematch && slices.ContainsFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--results-api-") }) {
		t.Errorf("matcher args %q re-match although results-api would refuse its token", c.Args)
	}
	if got := envValue(c, "CROWSNEST_NATS_USER"); got != "matcher" {
		t.Errorf("matcher NATS user %q, want matcher", got)
	}
	var token *corev1.ServiceAccountTokenProjection
	adminSecret := ""
	for _, v := range m.Spec.Volumes {
		if v.Projected != nil {
			for _, s := range v.Projected.Sources {
				if s.ServiceAccountToken != nil {
					token = s.ServiceAccountToken
				}
			}
		}
		if v.Name == "admin-token" && v.Secret != nil {
			adminSecret = v.Secret.SecretName
		}
	}
	if rematch && (token == nil || token.Audience != "crowsnest-results-api") {
		t.Errorf("matcher token projection %+v, want audience crowsnest-results-api", token)
	}
	if !rematch && token != nil {
		t.Errorf("matcher has a token projection %+v it cannot use", token)
	}
	if adminSecret != "crowsnest-results-api-write-token" {
		t.Errorf("matcher admin token from Secret %q, want results-api's crowsnest-results-api-write-token", adminSecret)
	}
}

// TestMatcherRematchSkip: matcher.rematchSkip reaches the matcher's
// --rematch-skip, --rematch-skip-check and --rematch-skip-check-max as given,
// the defaults being the matcher's own (skip on, 2% checked, at most 50).
func TestMatcherRematchSkip(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"defaults", scanTeamA, []string{"--rematch-skip=true", "--rematch-skip-check=0.02", "--rematch-skip-check-max=50"}},
		{"off, every skippable report checked", withScan("--set", "matcher.rematchSkip.enabled=false", "--set", "matcher.rematchSkip.checkFraction=1"),
			[]string{"--rematch-skip=false", "--rematch-skip-check=1"}},
		{"no check", withScan("--set", "matcher.rematchSkip.checkFraction=0"), []string{"--rematch-skip=true", "--rematch-skip-check=0"}},
		{"no cap", withScan("--set", "matcher.rematchSkip.checkMax=0"), []string{"--rematch-skip-check-max=0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := Template(ctx, repoRoot, releaseNS, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			c := container(t, objs, "StatefulSet/crowsnest-matcher")
			for _, a := range tc.want {
				if !slices.Contains(c.Args, a) {
					t.Errorf("matcher args %q lack %s", c.Args, a)
				}
			}
		})
	}
}

// TestNotifierNetworkFlows: the notifier reaches NATS, DNS and its
// receivers' ports, nothing of Crowsnest's data (Postgres, results-api's
// database) and no other port.
func TestNotifierNetworkFlows(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	objs, err := Template(ctx, repoRoot, releaseNS, "-f", "test/chart/testdata/values-notifier.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pol, err := LoadPolicies(objs)
	if err != nil {
		t.Fatal(err)
	}
	c := components(t, objs)
	n, nats, pg := c("notifier"), c("nats"), c("postgres")
	prometheus := Endpoint{Name: "prometheus", Namespace: "monitoring", Labels: map[string]string{"app.kubernetes.io/name": "prometheus"}}
	checkFlows(t, pol, []flow{
		{n, nats, 4222, true},
		{n, registry, 443, true},
		{n, registry, 9093, true},
		{n, registry, 80, false},
		{n, pg, 5432, false},
		{n, apiEndpoint, 6443, false},
		{prometheus, n, 8080, true}, // its metrics
	})
}

// TestMatcherNetworkFlows: scan Pods reach the matcher for the DB; the
// matcher reaches the upstream listing (not with upstreamURL off),
// results-api, NATS and DNS, and nothing else sampled here.
func TestMatcherNetworkFlows(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	scanPod := Endpoint{Name: "scan", Namespace: "team-a", Labels: map[string]string{
		"app.kubernetes.io/name": "crowsnest-scan", "app.kubernetes.io/managed-by": "crowsnest-operator"}}
	app := Endpoint{Name: "app", Namespace: "team-a", Labels: map[string]string{"app": "web"}}
	for _, tc := range []struct {
		name     string
		args     []string
		upstream bool
	}{
		{"defaults", scanTeamA, true},
		{"air gap", withScan("--set", "matcher.upstreamURL=off"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := Template(ctx, repoRoot, releaseNS, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			pol, err := LoadPolicies(objs)
			if err != nil {
				t.Fatal(err)
			}
			c := components(t, objs)
			m, api, nats, pg, op := c("matcher"), c("results-api"), c("nats"), c("postgres"), c("operator")
			checkFlows(t, pol, []flow{
				{scanPod, m, 8080, true},
				{app, m, 8080, true}, // the DB is public data; imports need the admin token
				{m, api, 8080, true},
				{m, nats, 4222, true},
				{m, pg, 5432, false},
				{m, op, 8080, false},
				{m, apiEndpoint, 6443, false},
				{m, registry, 443, tc.upstream},
				{m, registry, 80, false},
				{op, m, 8080, false}, // the operator only hands the URL to scan Jobs
			})
		})
	}
}
