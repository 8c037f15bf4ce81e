package charttest

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestReadAuthValues: reads need Kubernetes credentials by default (tokens
// for results-api's audience), an authenticating proxy is believed only
// from the addresses given, and open reads are an explicit choice.
func TestReadAuthValues(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, tc := range []struct {
		name      string
		args      []string
		want, not []string
	}{
		{"default", scanTeamA, []string{"--read-auth=kubernetes", "--token-audience=crowsnest-results-api", "--report-retention=720h",
			"--read-auth-namespaces=rbac", "--metrics-auth=kubernetes"}, []string{"--auth-proxy-user-header"}},
		{"every namespace reviewed", withScan("--set", "resultsApi.readAuth.namespaces=all"), []string{"--read-auth-namespaces=all"}, nil},
		{"static writes still check read tokens", withScan("--set", "resultsApi.auth.mode=static"),
			[]string{"--read-auth=kubernetes", "--token-audience=crowsnest-results-api"}, nil},
		{"authenticating proxy sidecar", withScan("--set", "resultsApi.readAuth.proxy.userHeader=X-Forwarded-User",
			"--set", "resultsApi.readAuth.proxy.groupsHeader=X-Forwarded-Groups", "--set", "resultsApi.readAuth.proxy.trustedCIDRs={127.0.0.1/32}"),
			[]string{"--auth-proxy-user-header=X-Forwarded-User", "--auth-proxy-groups-header=X-Forwarded-Groups", "--auth-proxy-trusted-cidrs=127.0.0.1/32"}, nil},
		{"open reads", withScan("--set", "resultsApi.readAuth.mode=open", "--set", "resultsApi.reportRetention=0s"),
			[]string{"--read-auth=open", "--report-retention=0s", "--metrics-auth=open"}, []string{"--read-auth=kubernetes", "--read-auth-namespaces"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := Template(ctx, repoRoot, releaseNS, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			api := container(t, objs, "Deployment/crowsnest-results-api")
			for _, a := range tc.want {
				if !slices.Contains(api.Args, a) {
					t.Errorf("results-api args %q lack %s", api.Args, a)
				}
			}
			for _, a := range tc.not {
				if slices.ContainsFunc(api.Args, func(x string) bool { return strings.HasPrefix(x, a) }) {
					t.Errorf("results-api args %q have %s", api.Args, a)
				}
			}
		})
	}
}
