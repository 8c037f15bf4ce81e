package charttest

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const releaseNS = "crowsnest-system"

// scanTeamA lists one scan namespace, which a render needs unless the
// operator is cluster-wide.
var scanTeamA = []string{"--set", "global.scan.namespaces={team-a}"}

// gitOpsSecrets names an existing Secret for every secret the chart would
// otherwise generate: what helm template, Argo CD and Flux need.
var gitOpsSecrets = withScan(
	"--set", "resultsApi.writeToken.existingSecret=crowsnest-admin-token", "--set", "resultsApi.writeToken.key=admin",
	"--set", "postgres.existingSecret=crowsnest-postgres-auth", "--set", "postgres.existingSecretKey=pw",
	"--set", "global.database.existingSecret.name=crowsnest-postgres-auth", "--set", "global.database.existingSecret.key=uri",
	"--set", "global.nats.users.existingSecret=crowsnest-nats-passwords")

// apiTLSNamed serves results-api over HTTPS with a Secret named by the user;
// apiTLSCertManager with one a cert-manager Certificate writes, the API
// announced as a cluster serving it would.
var (
	apiTLSNamed = []string{"--set", "global.resultsApi.tls.enabled=true", "--set", "global.resultsApi.tls.secretName=crowsnest-api-tls",
		"--set", "global.resultsApi.tls.uploaderTrustsCA=true"}
	apiTLSCertManager = []string{"--set", "global.resultsApi.tls.enabled=true", "--set", "global.resultsApi.tls.uploaderTrustsCA=true",
		"--set", "global.resultsApi.tls.certManager.issuerRef.name=crowsnest-ca", "--set", "global.resultsApi.tls.certManager.issuerRef.kind=ClusterIssuer",
		"--api-versions", "cert-manager.io/v1"}
)

// withScan is args after scanTeamA.
func withScan(args ...string) []string { return append(slices.Clone(scanTeamA), args...) }

// renderCase is one value set the chart must render, pass every check with
// and be accepted by the API server.
type renderCase struct {
	name         string
	args         []string
	clusterWide  bool     // operator.clusterWide: which RBAC policy applies
	staticWrites bool     // results-api in static write mode: its ClusterRole is for reads only
	want         []string // Kind/name (or Kind/namespace/name) that must be rendered
	absent       []string // kinds, or Kind/name, that must not be rendered
}

var renderCases = []renderCase{
	{
		name: "defaults with one scan namespace",
		args: scanTeamA,
		want: []string{"Deployment/crowsnest-operator", "Deployment/crowsnest-results-api", "StatefulSet/crowsnest-nats",
			"StatefulSet/crowsnest-postgres", "Secret/crowsnest-postgres", "Secret/crowsnest-results-api-write-token",
			"Secret/crowsnest-nats-users", "Secret/crowsnest-nats-config",
			"CustomResourceDefinition/scanners.crowsnest.dev", "ClusterRole/crowsnest-admin", "ClusterRole/crowsnest-view",
			// The operator: a Role in the scan namespace, the review APIs cluster-wide.
			"ClusterRole/crowsnest-operator", "ClusterRoleBinding/crowsnest-operator",
			"Role/team-a/crowsnest-operator", "RoleBinding/team-a/crowsnest-operator",
			"ClusterRole/crowsnest-metrics-reader", "ClusterRole/crowsnest-results-api", "ServiceAccount/team-a/crowsnest-scan",
			// NetworkPolicies are on by default.
			"NetworkPolicy/crowsnest-operator", "NetworkPolicy/crowsnest-results-api", "NetworkPolicy/crowsnest-nats",
			"NetworkPolicy/crowsnest-postgres", "NetworkPolicy/team-a/crowsnest-scan",
			// Two results-api replicas, one at a time disrupted; the scan identity policy.
			"PodDisruptionBudget/crowsnest-results-api",
			"ValidatingAdmissionPolicy/crowsnest-scan-identity", "ValidatingAdmissionPolicyBinding/crowsnest-scan-identity",
			"ValidatingAdmissionPolicy/crowsnest-scan-operator", "ValidatingAdmissionPolicyBinding/crowsnest-scan-operator"},
		absent: []string{"ServiceMonitor", "PrometheusRule", "Ingress", "Scanner", "ClusterScanner", "ConfigMap",
			"ClusterRoleBinding/crowsnest-metrics-reader", "Role/crowsnest-system/crowsnest-operator"},
	},
	{
		name:        "ClusterScanner",
		args:        clusterScannerArgs,
		clusterWide: true,
		want: []string{"ClusterScanner/crowsnest", "CustomResourceDefinition/clusterscanners.crowsnest.dev",
			"ClusterRole/crowsnest-operator", "ClusterRole/crowsnest-results-api", "ClusterRoleBinding/crowsnest-results-api",
			"ValidatingAdmissionPolicy/crowsnest-scan-identity"},
		// The operator makes the scan ServiceAccounts as namespaces come.
		absent: []string{"Role/crowsnest-operator", "RoleBinding/crowsnest-operator", "ServiceAccount/crowsnest-scan", "Scanner"},
	},
	{
		name:        "cluster-wide operator without scan namespaces",
		args:        []string{"--set", "operator.clusterWide=true"},
		clusterWide: true,
		// No scan namespaces: static admin token only for writes, so
		// results-api reviews tokens and access for reads only, and no scan
		// ServiceAccount or Role is created anywhere.
		staticWrites: true,
		want: []string{"ClusterRole/crowsnest-operator", "ClusterRoleBinding/crowsnest-operator", "ClusterRole/crowsnest-metrics-reader",
			"ClusterRole/crowsnest-results-api", "ClusterRoleBinding/crowsnest-results-api"},
		absent: []string{"RoleBinding/crowsnest-operator", "ServiceAccount/crowsnest-scan", "NetworkPolicy/crowsnest-scan"},
	},
	{
		name:        "cluster-wide operator with scan namespaces",
		args:        withScan("--set", "operator.clusterWide=true"),
		clusterWide: true,
		want:        []string{"ClusterRole/crowsnest-operator", "ServiceAccount/team-a/crowsnest-scan", "NetworkPolicy/team-a/crowsnest-scan"},
		absent:      []string{"Role/team-a/crowsnest-operator", "RoleBinding/team-a/crowsnest-operator"},
	},
	{
		name:   "NATS users from an existing Secret",
		args:   withScan("--set", "global.nats.users.existingSecret=my-nats-users"),
		want:   []string{"Secret/crowsnest-nats-config", "StatefulSet/crowsnest-nats"},
		absent: []string{"Secret/crowsnest-nats-users"},
	},
	{
		name: "every secret from an existing Secret (GitOps)",
		args: gitOpsSecrets,
		want: []string{"StatefulSet/crowsnest-postgres", "StatefulSet/crowsnest-nats", "Deployment/crowsnest-results-api"},
		// Nothing generated, so nothing that needs lookup: the NATS
		// configuration Secret then only names environment variables.
		absent: []string{"Secret/crowsnest-postgres", "Secret/crowsnest-results-api-write-token", "Secret/crowsnest-nats-users"},
	},
	{
		name: "results-api TLS from a named Secret",
		args: withScan(append(slices.Clone(apiTLSNamed), "--set", "monitoring.enabled=true", "--api-versions", "monitoring.coreos.com/v1",
			"--set", "resultsApi.ingress.enabled=true", "--set", "resultsApi.ingress.tlsSecretName=crowsnest-tls")...),
		want:   []string{"Deployment/crowsnest-results-api", "ServiceMonitor/crowsnest-results-api", "Ingress/crowsnest-results-api"},
		absent: []string{"Certificate"},
	},
	{
		// The Certificate is dry-run against a stand-in CRD
		// (testdata/cert-manager-crds): its kind and structure are checked,
		// not cert-manager's field list.
		name: "results-api TLS from cert-manager",
		args: withScan(apiTLSCertManager...),
		want: []string{"Certificate/crowsnest-results-api", "Deployment/crowsnest-results-api"},
	},
	{
		name:         "results-api TLS in static mode needs no word on the uploader",
		staticWrites: true,
		args: withScan("--set", "resultsApi.auth.mode=static", "--set", "global.resultsApi.tls.enabled=true",
			"--set", "global.resultsApi.tls.secretName=crowsnest-api-tls"),
		want: []string{"Deployment/crowsnest-results-api"},
	},
	{
		name: "ingress over plain HTTP by choice",
		args: withScan("--set", "resultsApi.ingress.enabled=true", "--set", "resultsApi.ingress.allowPlainHTTP=true"),
		want: []string{"Ingress/crowsnest-results-api"},
	},
	{
		name:   "external NATS with per-component credentials",
		args:   withScan("-f", "test/chart/testdata/values-external-nats-credentials.yaml"),
		want:   []string{"Deployment/crowsnest-operator", "Deployment/crowsnest-results-api"},
		absent: []string{"StatefulSet/crowsnest-nats", "Secret/crowsnest-nats-users", "Secret/crowsnest-nats-config"},
	},
	{
		name: "external NATS and database",
		args: withScan("-f", "test/chart/testdata/values-external.yaml"),
		// The matcher keeps its DB volume; nothing of the bundled NATS and
		// Postgres, and no generated Secret.
		want:   []string{"Deployment/crowsnest-operator", "Deployment/crowsnest-results-api", "StatefulSet/crowsnest-matcher"},
		absent: []string{"StatefulSet/crowsnest-nats", "StatefulSet/crowsnest-postgres", "PersistentVolumeClaim", "Secret"},
	},
	{
		name: "production knobs on every component",
		args: []string{"-f", "test/chart/testdata/values-production.yaml"},
		want: []string{"Deployment/crowsnest-notifier", "StatefulSet/crowsnest-matcher"},
	},
	{
		name: "notifier",
		args: []string{"-f", "test/chart/testdata/values-notifier.yaml"},
		want: []string{"Deployment/crowsnest-notifier", "ConfigMap/crowsnest-notifier", "ServiceAccount/crowsnest-notifier",
			"NetworkPolicy/crowsnest-notifier", "Service/crowsnest-notifier"},
	},
	{
		name: "monitoring with the Prometheus Operator API",
		args: withScan("--set", "monitoring.enabled=true", "--api-versions", "monitoring.coreos.com/v1",
			"--set", "monitoring.prometheusServiceAccount.namespace=monitoring", "--set", "monitoring.prometheusServiceAccount.name=prometheus"),
		want: []string{"ServiceMonitor/crowsnest-operator", "ServiceMonitor/crowsnest-results-api", "PrometheusRule/crowsnest-monitoring",
			"ConfigMap/crowsnest-dashboard-vulnerabilities", "ConfigMap/crowsnest-dashboard-operations", "ClusterRoleBinding/crowsnest-metrics-reader"},
	},
	{
		name: "operator metrics with a certificate Secret",
		args: withScan("--set", "monitoring.enabled=true", "--api-versions", "monitoring.coreos.com/v1",
			"--set", "operator.metrics.certSecret=crowsnest-operator-metrics-tls"),
		want:   []string{"ServiceMonitor/crowsnest-operator"},
		absent: []string{"ClusterRoleBinding/crowsnest-metrics-reader"},
	},
	{
		name:   "monitoring without the API renders the dashboards only",
		args:   withScan("--set", "monitoring.enabled=true"),
		want:   []string{"ConfigMap/crowsnest-dashboard-vulnerabilities", "ConfigMap/crowsnest-dashboard-operations"},
		absent: []string{"ServiceMonitor", "PrometheusRule"},
	},
	{
		name: "ingress",
		args: withScan("--set", "resultsApi.ingress.enabled=true", "--set", "resultsApi.ingress.tlsSecretName=crowsnest-tls"),
		want: []string{"Ingress/crowsnest-results-api"},
	},
	{
		name:   "network policies off",
		args:   withScan("--set", "global.networkPolicy.enabled=false"),
		absent: []string{"NetworkPolicy"},
	},
	{
		name: "Tilt dev values",
		args: []string{"-f", "deploy/dev/values.yaml"},
		want: []string{"Deployment/crowsnest-operator", "Scanner/demo/default", "Role/demo/crowsnest-operator"},
		// No generated Secret: helm template would make a new one on every
		// Tiltfile reload. (The NATS configuration Secret is not generated:
		// with existing passwords it only names environment variables.)
		absent: []string{"Secret/crowsnest-postgres", "Secret/crowsnest-results-api-write-token", "Secret/crowsnest-nats-users"},
	},
	{
		name: "everything on",
		args: []string{"-f", "test/chart/testdata/values-everything.yaml", "--api-versions", "monitoring.coreos.com/v1"},
		want: []string{"Scanner/team-a/default", "Scanner/team-b/default", "ServiceAccount/team-a/crowsnest-scan",
			"ClusterRole/crowsnest-results-api", "ClusterRoleBinding/crowsnest-results-api", "Ingress/crowsnest-results-api",
			"ServiceMonitor/crowsnest-results-api", "NetworkPolicy/crowsnest-nats", "Role/team-b/crowsnest-operator",
			"NetworkPolicy/team-b/crowsnest-scan", "ClusterRoleBinding/crowsnest-metrics-reader"},
	},
}

func TestRenderedChart(t *testing.T) {
	applier, err := NewApplier(apiCfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, ns := range []string{releaseNS, "team-a", "team-b", "demo"} {
		nsObj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}}
		if err := applier.Apply(ctx, nsObj); err != nil {
			t.Fatal(err)
		}
	}

	for _, tc := range renderCases {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := Template(ctx, repoRoot, releaseNS, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			assertRendered(t, objs, tc)
			pods, err := PodTemplates(objs)
			if err != nil {
				t.Fatal(err)
			}
			if len(pods) == 0 {
				t.Fatal("no workloads rendered")
			}
			problems, err := CheckRestricted(pods)
			if err != nil {
				t.Fatal(err)
			}
			problems = append(problems, CheckImages(pods)...)
			problems = append(problems, CheckManifestSecrets(objs, pods)...)
			policy := rbacPolicy(t, "crowsnest", tc.clusterWide)
			if tc.staticWrites {
				policy["ClusterRole/crowsnest-results-api"] = RolePolicy{Rules: ResultsAPIReadRules}
			}
			rbacProblems, err := CheckRBAC(objs, policy)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range append(problems, rbacProblems...) {
				t.Error(p)
			}
			// CRDs first, so the custom resources after them have a schema.
			slices.SortStableFunc(objs, func(a, b *unstructured.Unstructured) int {
				return boolInt(b.GetKind() == "CustomResourceDefinition") - boolInt(a.GetKind() == "CustomResourceDefinition")
			})
			for _, o := range objs {
				if err := applier.DryRunApply(ctx, o); err != nil {
					t.Errorf("API server rejected a rendered object: %v", err)
				}
			}
		})
	}
}

func assertRendered(t *testing.T, objs []*unstructured.Unstructured, tc renderCase) {
	t.Helper()
	have := map[string]bool{}
	kinds := map[string]bool{}
	for _, o := range objs {
		have[o.GetKind()+"/"+o.GetName()] = true
		have[o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName()] = true
		kinds[o.GetKind()] = true
		if o.GetKind() != "CustomResourceDefinition" && !strings.HasPrefix(o.GetKind(), "Cluster") && !strings.HasPrefix(o.GetKind(), "ValidatingAdmissionPolicy") && o.GetNamespace() == "" {
			t.Errorf("%s/%s has no namespace", o.GetKind(), o.GetName())
		}
	}
	for _, w := range tc.want {
		if !have[w] {
			t.Errorf("%s not rendered", w)
		}
	}
	for _, k := range tc.absent {
		if kinds[k] || have[k] {
			t.Errorf("%s rendered, want none", k)
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestDryRunIsStrict proves the dry-run would catch a bad manifest: the API
// server rejects a rendered Deployment with a misspelt field.
func TestDryRunIsStrict(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	objs, err := Template(ctx, repoRoot, releaseNS, scanTeamA...)
	if err != nil {
		t.Fatal(err)
	}
	applier, err := NewApplier(apiCfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetKind() != "Deployment" {
			continue
		}
		bad := o.DeepCopy()
		if err := unstructured.SetNestedField(bad.Object, int64(1), "spec", "template", "spec", "replicaz"); err != nil {
			t.Fatal(err)
		}
		if err := applier.DryRunApply(ctx, bad); err == nil || !strings.Contains(err.Error(), "replicaz") {
			t.Errorf("dry-run of %s with a misspelt field: err = %v, want a strict-validation error naming it", o.GetName(), err)
		}
		return
	}
	t.Fatal("no Deployment rendered")
}

// TestResultsAPIReadsDatabaseFromSecret: with an external database the URL
// is a file from the named Secret (never an env value or a flag), and the
// NATS URL with its credentials comes from the named Secret too.
func TestResultsAPIReadsDatabaseFromSecret(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	objs, err := Template(ctx, repoRoot, releaseNS, withScan("-f", "test/chart/testdata/values-external.yaml")...)
	if err != nil {
		t.Fatal(err)
	}
	pods, err := PodTemplates(objs)
	if err != nil {
		t.Fatal(err)
	}
	var api *PodTemplate
	natsRefs := 0
	for i, p := range pods {
		if p.Object == "Deployment/crowsnest-results-api" {
			api = &pods[i]
		}
		for _, c := range p.Spec.Containers {
			for _, e := range c.Env {
				if e.Name != "CROWSNEST_NATS_URL" {
					continue
				}
				natsRefs++
				if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil || e.ValueFrom.SecretKeyRef.Name != "nats-credentials" || e.ValueFrom.SecretKeyRef.Key != "url" {
					t.Errorf("%s CROWSNEST_NATS_URL = %+v, want secretKeyRef nats-credentials/url", p.Object, e)
				}
			}
		}
	}
	if natsRefs != 3 {
		t.Errorf("saw CROWSNEST_NATS_URL %d times, want 3 (operator, results-api, matcher)", natsRefs)
	}
	if api == nil {
		t.Fatal("results-api Deployment not rendered")
	}
	if !slices.Contains(api.Spec.Containers[0].Args, "--database-url-file=/var/run/secrets/crowsnest/database/url") {
		t.Errorf("results-api args %q lack --database-url-file", api.Spec.Containers[0].Args)
	}
	found := false
	for _, v := range api.Spec.Volumes {
		if v.Name != "database" {
			continue
		}
		found = true
		want := corev1.KeyToPath{Key: "uri", Path: "url"}
		if v.Secret == nil || v.Secret.SecretName != "crowsnest-database" || len(v.Secret.Items) != 1 || v.Secret.Items[0] != want {
			t.Errorf("database volume = %+v, want Secret crowsnest-database key uri as url", v.VolumeSource)
		}
	}
	if !found {
		t.Error("results-api has no database volume")
	}
}

// rbacPolicy is exactly what each role of release holds. The operator's
// generated rules go all into its ClusterRole when clusterWide; otherwise,
// less the ClusterScanner controller's (ClusterWideOnly), those on
// namespaced resources (as the API server's discovery says, not as the
// chart splits them) into Role <release>-operator in each scan namespace,
// and the rest (the review APIs) into its ClusterRole. Then its
// leader-election Role, the metrics reader, results-api's authorization,
// and the admin and view roles for people.
func rbacPolicy(t *testing.T, release string, clusterWide bool) map[string]RolePolicy {
	t.Helper()
	policy := map[string]RolePolicy{
		"ClusterRole/" + release + "-results-api": {Rules: ResultsAPIRules},
		"ClusterRole/" + release + "-admin":       {Rules: AdminRules},
		"ClusterRole/" + release + "-view":        {Rules: ViewRules, AggregateTo: []string{"view"}},
	}
	load := func(file string) []rbacv1.PolicyRule {
		rules, err := LoadRole(filepath.Join(repoRoot, file))
		if err != nil {
			t.Fatal(err)
		}
		return rules
	}
	policy["Role/"+release+"-operator-leader-election"] = RolePolicy{Rules: load(LeaderElectionRole)}
	policy["ClusterRole/"+release+"-metrics-reader"] = RolePolicy{Rules: load(MetricsReaderRole)}
	operator := load(OperatorRole)
	if clusterWide {
		policy["ClusterRole/"+release+"-operator"] = RolePolicy{Rules: append(operator, OperatorReadRules...)}
		return policy
	}
	scope, err := DiscoveryScope(apiCfg)
	if err != nil {
		t.Fatal(err)
	}
	namespaced, cluster, err := SplitByScope(WithoutPermissions(operator, ClusterWideOnly), scope)
	if err != nil {
		t.Fatal(err)
	}
	policy["Role/"+release+"-operator"] = RolePolicy{Rules: namespaced}
	policy["ClusterRole/"+release+"-operator"] = RolePolicy{Rules: append(cluster, OperatorReadRules...)}
	return policy
}

// TestProductionKnobs: every component takes the usual knobs of production
// charts (podLabels, priorityClassName, topologySpreadConstraints,
// extraEnv, extraVolumes, extraVolumeMounts), and they land in its Pod.
func TestProductionKnobs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	objs, err := Template(ctx, repoRoot, releaseNS, "-f", "test/chart/testdata/values-production.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pods, err := PodTemplates(objs)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, p := range pods {
		// The helm test Pod takes the operator's scheduling, not these knobs.
		if (p.Meta.Namespace != "" && p.Meta.Namespace != releaseNS) || p.Object == "Pod/crowsnest-test" {
			continue
		}
		seen++
		c := p.Spec.Containers[0]
		mounted := false
		for _, m := range c.VolumeMounts {
			mounted = mounted || (m.Name == "extra-ca" && m.MountPath == "/etc/ssl/corporate")
		}
		volume := false
		for _, v := range p.Spec.Volumes {
			volume = volume || (v.Name == "extra-ca" && v.ConfigMap != nil)
		}
		if p.Meta.Labels["team"] != "platform" || p.Spec.PriorityClassName != "crowsnest-critical" || len(p.Spec.TopologySpreadConstraints) != 1 ||
			p.Spec.TopologySpreadConstraints[0].TopologyKey != "topology.kubernetes.io/zone" || envValue(c, "HTTPS_PROXY") != "http://proxy.example:3128" ||
			!mounted || !volume {
			t.Errorf("%s: labels %v, priorityClassName %q, spread %v, HTTPS_PROXY %q, extra-ca mounted %v, volume %v", p.Object, p.Meta.Labels,
				p.Spec.PriorityClassName, p.Spec.TopologySpreadConstraints, envValue(c, "HTTPS_PROXY"), mounted, volume)
		}
	}
	if seen != 6 {
		t.Errorf("%d workloads in the release namespace, want 6 (operator, results-api, matcher, notifier, NATS, Postgres)", seen)
	}
}

// TestNameOverrides: with global.fullnameOverride every object, cluster-scoped
// ones included, takes that prefix and every reference follows (the API
// server accepts them all, and the NetworkPolicies still select the Pods);
// with nameOverride the app.kubernetes.io/name label changes everywhere.
func TestNameOverrides(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	objs, err := Template(ctx, repoRoot, releaseNS, "-f", "test/chart/testdata/values-notifier.yaml",
		"--set", "global.fullnameOverride=cn", "--set", "global.nameOverride=vuln")
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"Deployment/cn-operator", "Deployment/cn-results-api", "StatefulSet/cn-matcher", "Deployment/cn-notifier",
		"ClusterRole/cn-operator", "ClusterRole/cn-view", "ClusterRole/cn-admin", "ValidatingAdmissionPolicy/cn-scan-identity"} {
		if find(objs, id) == nil {
			t.Errorf("%s not rendered", id)
		}
	}
	for _, o := range objs {
		// The scan ServiceAccount's name is its own value (global.scan.serviceAccount).
		if name := o.GetName(); strings.HasPrefix(name, "crowsnest-") && name != "crowsnest-scan" {
			t.Errorf("%s/%s keeps the release name", o.GetKind(), name)
		}
		if l := o.GetLabels()["app.kubernetes.io/name"]; l != "" && l != "vuln" {
			t.Errorf("%s/%s: app.kubernetes.io/name %q", o.GetKind(), o.GetName(), l)
		}
	}
	pol, err := LoadPolicies(objs)
	if err != nil {
		t.Fatal(err)
	}
	c := components(t, objs)
	if ok, err := pol.Allowed(c("operator"), c("results-api"), 8080); err != nil || !ok {
		t.Errorf("operator -> results-api under the override: %v, %v", ok, err)
	}
	applier, err := NewApplier(apiCfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{releaseNS, "team-a"} {
		nsObj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}}
		if err := applier.Apply(ctx, nsObj); err != nil {
			t.Fatal(err)
		}
	}
	slices.SortStableFunc(objs, func(a, b *unstructured.Unstructured) int {
		return boolInt(b.GetKind() == "CustomResourceDefinition") - boolInt(a.GetKind() == "CustomResourceDefinition")
	})
	for _, o := range objs {
		if err := applier.DryRunApply(ctx, o); err != nil {
			t.Errorf("API server rejected a rendered object: %v", err)
		}
	}
}
