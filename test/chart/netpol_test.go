package charttest

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestNetworkPolicyFlows: with NetworkPolicies on, exactly Crowsnest's own
// flows are open inside the release namespace.
func TestNetworkPolicyFlows(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	objs, err := Template(ctx, repoRoot, releaseNS, "--set", "global.networkPolicy.enabled=true")
	if err != nil {
		t.Fatal(err)
	}
	pods, err := PodTemplates(objs)
	if err != nil {
		t.Fatal(err)
	}
	byComponent := map[string]PodTemplate{}
	for _, p := range pods {
		byComponent[p.Meta.Labels["app.kubernetes.io/component"]] = p
	}
	other := PodTemplate{Object: "other", Meta: metav1.ObjectMeta{Labels: map[string]string{"app": "other"}}}
	natsClient := PodTemplate{Object: "nats-client", Meta: metav1.ObjectMeta{Labels: map[string]string{"crowsnest.dev/nats-client": "true"}}}
	pol, err := LoadPolicies(objs)
	if err != nil {
		t.Fatal(err)
	}
	c := func(name string) PodTemplate {
		p, ok := byComponent[name]
		if !ok {
			t.Fatalf("component %s not rendered", name)
		}
		return p
	}
	tests := []struct {
		from, to PodTemplate
		port     int32
		want     bool
	}{
		{c("operator"), c("results-api"), 8080, true},
		{c("operator"), c("nats"), 4222, true},
		{c("results-api"), c("postgres"), 5432, true},
		{c("results-api"), c("nats"), 4222, true},
		{other, c("results-api"), 8080, true}, // browsers, scan Jobs
		{natsClient, c("nats"), 4222, true},
		{c("operator"), c("postgres"), 5432, false},
		{other, c("postgres"), 5432, false},
		{other, c("nats"), 4222, false},
		{c("nats"), c("postgres"), 5432, false},
		{c("postgres"), c("results-api"), 8080, false}, // Postgres has no egress
		{other, c("operator"), 8081, false},            // health port is for the kubelet only
		{c("results-api"), c("nats"), 8222, false},
	}
	for _, tt := range tests {
		got, err := pol.Allowed(tt.from, tt.to, tt.port)
		if err != nil {
			t.Fatal(err)
		}
		if got != tt.want {
			t.Errorf("%s -> %s:%d allowed = %v, want %v", tt.from.Object, tt.to.Object, tt.port, got, tt.want)
		}
	}
}
