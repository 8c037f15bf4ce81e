package charttest

import (
	"context"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestHelmTestHook: `helm test` runs one hardened Pod (the uploader image's
// probe subcommand, no API token) whose URLs are results-api's and the
// operator's /readyz: each URL's host and port resolve to a rendered
// Service whose target port is the component's container port, and the
// NetworkPolicies let the test Pod through to exactly those two ports.
// Over HTTPS it trusts results-api's CA. (The probe itself is tested
// against a real results-api in uploader/probe_test.go; no test here runs
// the Pod, since nothing here runs containers.)
func TestHelmTestHook(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, tt := range []struct {
		name      string
		args      []string
		apiScheme string
	}{
		{"http", scanTeamA, "http"},
		{"https", withScan(apiTLSNamed...), "https"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := Template(ctx, repoRoot, releaseNS, tt.args...)
			if err != nil {
				t.Fatal(err)
			}
			pod := podTemplate(t, objs, "Pod/crowsnest-test")
			if hook := find(objs, "Pod/crowsnest-test").GetAnnotations()["helm.sh/hook"]; hook != "test" {
				t.Errorf("helm.sh/hook = %q, want test", hook)
			}
			problems, err := CheckRestricted([]PodTemplate{pod})
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range problems {
				t.Error(p)
			}
			spec := pod.Spec
			c := spec.Containers[0]
			if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken || spec.RestartPolicy != corev1.RestartPolicyNever ||
				c.SecurityContext == nil || c.SecurityContext.ReadOnlyRootFilesystem == nil || !*c.SecurityContext.ReadOnlyRootFilesystem {
				t.Errorf("test Pod: automount %v, restartPolicy %s, securityContext %+v; want no token, Never, read-only root",
					spec.AutomountServiceAccountToken, spec.RestartPolicy, c.SecurityContext)
			}
			if op := container(t, objs, "Deployment/crowsnest-operator"); c.Image != envValue(op, "CROWSNEST_UPLOADER_IMAGE") {
				t.Errorf("test image %s, want the uploader image %s", c.Image, envValue(op, "CROWSNEST_UPLOADER_IMAGE"))
			}
			if len(c.Args) != 4 || c.Args[0] != "probe" {
				t.Fatalf("args %q, want probe, a deadline and two URLs", c.Args)
			}
			pol, err := LoadPolicies(objs)
			if err != nil {
				t.Fatal(err)
			}
			comp := components(t, objs)
			tester := PodEndpoint(pod, releaseNS)
			for i, target := range []struct{ component, scheme string }{{"results-api", tt.apiScheme}, {"operator", "http"}} {
				u, err := url.Parse(c.Args[2+i])
				if err != nil || u.Scheme != target.scheme || u.Path != "/readyz" {
					t.Errorf("URL %q: want %s://…/readyz (%v)", c.Args[2+i], target.scheme, err)
					continue
				}
				port := resolveService(t, objs, u, comp(target.component))
				if ok, err := pol.Allowed(tester, comp(target.component), port); err != nil || !ok {
					t.Errorf("test Pod -> %s:%d denied by the NetworkPolicies (%v)", target.component, port, err)
				}
			}
			for _, deny := range []struct {
				to   string
				port int32
			}{{"postgres", 5432}, {"nats", 4222}, {"operator", 8080}, {"results-api", 9090}} {
				if ok, _ := pol.Allowed(tester, comp(deny.to), deny.port); ok {
					t.Errorf("test Pod -> %s:%d allowed, want denied", deny.to, deny.port)
				}
			}
			other := Endpoint{Name: "other", Namespace: releaseNS, Labels: map[string]string{"app": "other"}}
			if ok, _ := pol.Allowed(other, comp("operator"), 8081); ok {
				t.Error("another Pod reaches the operator's health port")
			}
			if ok, _ := pol.Allowed(comp("results-api"), tester, 8080); ok {
				t.Error("the test Pod accepts connections")
			}
			if tt.apiScheme == "https" {
				if envValue(c, "SSL_CERT_DIR") != "/var/run/secrets/crowsnest/results-api-ca:/etc/ssl/certs" {
					t.Errorf("SSL_CERT_DIR = %q", envValue(c, "SSL_CERT_DIR"))
				}
				if v := volume(t, pod, "results-api-ca"); v.Secret == nil || v.Secret.SecretName != "crowsnest-api-tls" || len(v.Secret.Items) != 1 || v.Secret.Items[0].Key != "ca.crt" {
					t.Errorf("results-api-ca volume %+v, want only ca.crt of crowsnest-api-tls", v.VolumeSource)
				}
			}
		})
	}
}

// resolveService finds the Service named by u's host (<name>.<namespace>.svc)
// and port, checks it selects target and that its target port is one of
// target's container ports, and returns that container port.
func resolveService(t *testing.T, objs []*unstructured.Unstructured, u *url.URL, target Endpoint) int32 {
	t.Helper()
	name, rest, _ := strings.Cut(u.Hostname(), ".")
	if rest != releaseNS+".svc" {
		t.Fatalf("URL host %s is not a Service of %s", u.Host, releaseNS)
	}
	o := find(objs, "Service/"+name)
	if o == nil {
		t.Fatalf("URL %s: Service %s not rendered", u, name)
	}
	var svc corev1.Service
	if err := fromUnstructured(o, &svc); err != nil {
		t.Fatal(err)
	}
	if !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(target.Labels)) {
		t.Fatalf("Service %s does not select %s", name, target.Name)
	}
	port := map[string]int32{"http": 80, "https": 443}[u.Scheme]
	if p := u.Port(); p != "" {
		n, err := strconv.ParseInt(p, 10, 32)
		if err != nil {
			t.Fatal(err)
		}
		port = int32(n)
	}
	for _, sp := range svc.Spec.Ports {
		if sp.Port != port {
			continue
		}
		for _, cp := range target.Ports {
			if (sp.TargetPort.Type == intstr.String && sp.TargetPort.StrVal == cp.Name) || (sp.TargetPort.Type == intstr.Int && sp.TargetPort.IntVal == cp.ContainerPort) {
				return cp.ContainerPort
			}
		}
		t.Fatalf("Service %s port %d targets %s, which %s does not expose", name, port, sp.TargetPort.String(), target.Name)
	}
	t.Fatalf("Service %s has no port %d", name, port)
	return 0
}

// TestPodDisruptionBudgets: a budget for each component running more than
// one replica (results-api by default, the operator when scaled), never for
// one replica (it would block every node drain), configurable per
// component, off when disabled; each selects exactly its component's Pods.
func TestPodDisruptionBudgets(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, tt := range []struct {
		name string
		args []string
		want map[string]int32 // PDB name → maxUnavailable
	}{
		{"defaults", scanTeamA, map[string]int32{"crowsnest-results-api": 1}},
		{"operator scaled, results-api budget wider", withScan("--set", "operator.replicas=3", "--set", "resultsApi.replicas=4",
			"--set", "resultsApi.podDisruptionBudget.maxUnavailable=2"), map[string]int32{"crowsnest-results-api": 2, "crowsnest-operator": 1}},
		{"one replica each", withScan("--set", "resultsApi.replicas=1"), map[string]int32{}},
		{"disabled", withScan("--set", "operator.replicas=2", "--set", "resultsApi.podDisruptionBudget.enabled=false",
			"--set", "operator.podDisruptionBudget.enabled=false"), map[string]int32{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := Template(ctx, repoRoot, releaseNS, tt.args...)
			if err != nil {
				t.Fatal(err)
			}
			pods := podsByObject(t, objs)
			got := map[string]int32{}
			for _, o := range objs {
				if o.GetKind() != "PodDisruptionBudget" {
					continue
				}
				var pdb policyv1.PodDisruptionBudget
				if err := fromUnstructured(o, &pdb); err != nil {
					t.Fatal(err)
				}
				if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MinAvailable != nil {
					t.Errorf("%s: maxUnavailable %v, minAvailable %v", pdb.Name, pdb.Spec.MaxUnavailable, pdb.Spec.MinAvailable)
					continue
				}
				got[pdb.Name] = pdb.Spec.MaxUnavailable.IntVal
				sel := labels.SelectorFromSet(pdb.Spec.Selector.MatchLabels)
				for id, p := range pods {
					if want := id == "Deployment/"+pdb.Name; sel.Matches(labels.Set(p.Meta.Labels)) != want {
						t.Errorf("%s selects %s: %v, want %v", pdb.Name, id, !want, want)
					}
				}
			}
			if len(got) != len(tt.want) {
				t.Errorf("budgets %v, want %v", got, tt.want)
			}
			for name, n := range tt.want {
				if got[name] != n {
					t.Errorf("%s maxUnavailable %d, want %d (all: %v)", name, got[name], n, got)
				}
			}
		})
	}
	// The schema refuses a budget of zero and unknown keys.
	for _, bad := range [][]string{{"--set", "resultsApi.podDisruptionBudget.maxUnavailable=0"}, {"--set", "operator.podDisruptionBudget.minAvailable=1"}} {
		if _, err := Template(ctx, repoRoot, releaseNS, withScan(bad...)...); err == nil || !strings.Contains(err.Error(), "podDisruptionBudget") {
			t.Errorf("%v: err = %v, want a schema error", bad, err)
		}
	}
}
