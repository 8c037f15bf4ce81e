package charttest

import (
	"context"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/crowsnest-dev/crowsnest/api/scan"
)

// flow is one TCP connection and whether the policies must allow it.
type flow struct {
	from, to Endpoint
	port     int32
	want     bool
}

// Addresses outside the cluster's Pods: the kube-apiserver's Service and
// endpoint (most CNIs see the endpoint, after the Service's DNAT), an image
// registry, and an external NATS and Postgres.
var (
	apiService  = External("kube-apiserver Service", "10.96.0.1")
	apiEndpoint = External("kube-apiserver", "172.18.0.2")
	registry    = External("registry", "203.0.113.10")
	extNATS     = External("external NATS", "198.51.100.7")
	extDB       = External("external Postgres", "198.51.100.8")
)

// TestNetworkPolicyFlows: with the default NetworkPolicies (on), exactly the
// flows Crowsnest uses are open: operator → results-api, NATS,
// kube-apiserver; results-api → Postgres, NATS, kube-apiserver (tokenreview
// mode only); scan Pods in a scanned namespace → results-api and registries;
// Prometheus → the operator's metrics and results-api; an ingress
// controller → results-api; DNS. Everything else sampled here is closed.
func TestNetworkPolicyFlows(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	prometheus := Endpoint{Name: "prometheus", Namespace: "monitoring", Labels: map[string]string{"app.kubernetes.io/name": "prometheus"}}
	ingress := Endpoint{Name: "ingress-nginx", Namespace: "ingress-nginx", Labels: map[string]string{"app.kubernetes.io/name": "ingress-nginx"}}
	dns := Endpoint{Name: "coredns", Namespace: "kube-system", Labels: map[string]string{"k8s-app": "kube-dns"}}
	other := Endpoint{Name: "other", Namespace: releaseNS, Labels: map[string]string{"app": "other"}}
	natsClient := Endpoint{Name: "nats-client", Namespace: releaseNS, Labels: map[string]string{"crowsnest.dev/nats-client": "true"}}
	// A scan Pod as the operator labels it (api/scan), and a neighbour.
	scanPod := Endpoint{Name: "scan", Namespace: "team-a", Labels: map[string]string{
		scan.LabelName: scan.AppName, scan.LabelManagedBy: scan.ManagedBy, "batch.kubernetes.io/job-name": "default-scan-0123"}}
	app := Endpoint{Name: "app", Namespace: "team-a", Labels: map[string]string{"app": "web"}}

	// base are the flows that hold for every value set below.
	base := func(c func(string) Endpoint) []flow {
		op, api := c("operator"), c("results-api")
		return []flow{
			{op, api, 8080, true},
			{op, dns, 53, true},
			{op, registry, 5000, false},
			{api, dns, 53, true},
			{api, op, 8080, false},
			{scanPod, api, 8080, true}, // the upload, from another namespace
			{scanPod, registry, 443, true},
			{scanPod, dns, 53, true},
			{scanPod, op, 8080, false},
			{scanPod, apiEndpoint, 6443, false},
			{app, scanPod, 8080, false}, // scan Pods accept nothing
			{prometheus, op, 8080, true},
			{prometheus, api, 8080, true},
			{prometheus, api, 9090, true}, // /metrics on its own port
			{prometheus, op, 8081, false}, // health port is for the kubelet only
			{ingress, api, 8080, true},
			{other, api, 8080, true}, // browsers through a port-forward or a Service
		}
	}
	// bundled are the flows of the bundled NATS and Postgres.
	bundled := func(c func(string) Endpoint) []flow {
		op, api, nats, pg := c("operator"), c("results-api"), c("nats"), c("postgres")
		return []flow{
			{op, nats, 4222, true},
			{op, pg, 5432, false},
			{api, pg, 5432, true},
			{api, nats, 4222, true},
			{api, nats, 8222, false},
			{scanPod, nats, 4222, false},
			{scanPod, pg, 5432, false},
			{prometheus, nats, 4222, false},
			{prometheus, pg, 5432, false},
			{natsClient, nats, 4222, true},
			{other, pg, 5432, false},
			{other, nats, 4222, false},
			{nats, pg, 5432, false},
			{pg, api, 8080, false}, // Postgres has no egress
			{nats, registry, 443, false},
		}
	}
	for _, tc := range []struct {
		name     string
		args     []string
		external bool // no bundled NATS and Postgres
		more     func(c func(string) Endpoint) []flow
	}{
		{"defaults (tokenreview)", scanTeamA, false, func(c func(string) Endpoint) []flow {
			op, api := c("operator"), c("results-api")
			return []flow{
				{op, apiService, 443, true},
				{op, apiEndpoint, 6443, true},
				{op, registry, 443, true},    // without apiServerCIDRs: any address on the apiserver ports
				{api, apiService, 443, true}, // TokenReview, SubjectAccessReview, Pod and Job GETs
				{api, apiEndpoint, 6443, true},
				{api, registry, 80, false},
				{scanPod, registry, 5000, false}, // scanEgressPorts: 443 only
			}
		}},
		{"static writes, open reads: results-api never calls the API server", withScan("--set", "resultsApi.auth.mode=static", "--set", "resultsApi.readAuth.mode=open"), false, func(c func(string) Endpoint) []flow {
			op, api := c("operator"), c("results-api")
			return []flow{
				{op, apiEndpoint, 6443, true},
				{api, apiService, 443, false},
				{api, apiEndpoint, 6443, false},
			}
		}},
		{"kube-apiserver CIDRs", withScan("--set", "global.networkPolicy.apiServerCIDRs={172.18.0.2/32}"), false, func(c func(string) Endpoint) []flow {
			op, api := c("operator"), c("results-api")
			return []flow{
				{op, apiEndpoint, 6443, true},
				{op, apiEndpoint, 443, true},
				{op, apiService, 443, false},
				{op, registry, 443, false},
				{api, apiEndpoint, 6443, true},
				{api, registry, 443, false},
			}
		}},
		// The port is named https then; every flow to it stays the same.
		{"results-api over HTTPS", withScan(apiTLSNamed...), false, func(func(string) Endpoint) []flow { return nil }},
		{"more registry ports", withScan("--set", "global.networkPolicy.scanEgressPorts={443,5000}"), false, func(func(string) Endpoint) []flow {
			return []flow{{scanPod, registry, 5000, true}, {scanPod, registry, 80, false}}
		}},
		{"external NATS and database", withScan("-f", "test/chart/testdata/values-external.yaml"), true, func(c func(string) Endpoint) []flow {
			op, api := c("operator"), c("results-api")
			return []flow{
				{op, extNATS, 4222, true},
				{api, extNATS, 4222, true},
				{api, extDB, 5432, true},
				{op, extDB, 5432, false},
				{scanPod, extNATS, 4222, false},
			}
		}},
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
			flows := append(base(c), tc.more(c)...)
			if !tc.external {
				flows = append(flows, bundled(c)...)
			}
			checkFlows(t, pol, flows)
		})
	}
}

// components returns the rendered Pod of a component, as an endpoint in the
// release namespace.
func components(t *testing.T, objs []*unstructured.Unstructured) func(string) Endpoint {
	t.Helper()
	pods, err := PodTemplates(objs)
	if err != nil {
		t.Fatal(err)
	}
	byComponent := map[string]Endpoint{}
	for _, p := range pods {
		byComponent[p.Meta.Labels["app.kubernetes.io/component"]] = PodEndpoint(p, releaseNS)
	}
	return func(name string) Endpoint {
		e, ok := byComponent[name]
		if !ok {
			t.Fatalf("component %s not rendered", name)
		}
		return e
	}
}

// TestPoliciesSemantics pins the evaluator on hand-made policies, so a flow
// test that passes means the policies allow it, not that the evaluator is
// lenient: a podSelector peer is in the policy's namespace only, a
// namespaceSelector reaches other namespaces, ipBlock matches addresses
// outside the cluster's Pods minus its exceptions, and an unselected Pod is
// open.
func TestPoliciesSemantics(t *testing.T) {
	tcp := func(port int32) []networkingv1.NetworkPolicyPort {
		p := intstr.FromInt32(port)
		return []networkingv1.NetworkPolicyPort{{Port: &p}}
	}
	sel := func(l map[string]string) *metav1.LabelSelector { return &metav1.LabelSelector{MatchLabels: l} }
	db := map[string]string{"app": "db"}
	web := map[string]string{"app": "web"}
	pol := &Policies{items: []networkingv1.NetworkPolicy{
		{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "a"}, Spec: networkingv1.NetworkPolicySpec{
			PodSelector: *sel(db), PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{
				{From: []networkingv1.NetworkPolicyPeer{{PodSelector: sel(web)}}, Ports: tcp(5432)},
				{From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: sel(map[string]string{"kubernetes.io/metadata.name": "c"}), PodSelector: sel(web)}}, Ports: tcp(5432)},
			},
		}},
		{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "a"}, Spec: networkingv1.NetworkPolicySpec{
			PodSelector: *sel(web), PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
			Egress: []networkingv1.NetworkPolicyEgressRule{
				{To: []networkingv1.NetworkPolicyPeer{{PodSelector: sel(db)}}, Ports: tcp(5432)},
				{To: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/8", Except: []string{"10.1.0.0/16"}}}}, Ports: tcp(443)},
			},
		}},
	}}
	dbA := Endpoint{Name: "db", Namespace: "a", Labels: db}
	webA := Endpoint{Name: "web", Namespace: "a", Labels: web}
	webB := Endpoint{Name: "web", Namespace: "b", Labels: web}
	webC := Endpoint{Name: "web", Namespace: "c", Labels: web}
	dbB := Endpoint{Name: "db", Namespace: "b", Labels: db}
	checkFlows(t, pol, []flow{
		{webA, dbA, 5432, true},
		{webA, dbA, 5433, false},
		{webB, dbA, 5432, false}, // podSelector alone: namespace a only
		{webC, dbA, 5432, true},  // namespaceSelector c
		{webA, dbB, 5432, false}, // the egress peer is a's db, not b's
		{webB, dbB, 5432, true},  // nothing selects Pods in b
		{webA, External("in", "10.2.3.4"), 443, true},
		{webA, External("except", "10.1.2.3"), 443, false},
		{webA, External("outside", "192.0.2.1"), 443, false},
		{webA, dbA, 443, false},
	})
}

// checkFlows fails t for every flow the policies decide otherwise than
// expected.
func checkFlows(t *testing.T, pol *Policies, flows []flow) {
	t.Helper()
	for _, f := range flows {
		got, err := pol.Allowed(f.from, f.to, f.port)
		if err != nil {
			t.Fatal(err)
		}
		if got != f.want {
			t.Errorf("%s -> %s:%d allowed = %v, want %v", f.from, f.to, f.port, got, f.want)
		}
	}
}
