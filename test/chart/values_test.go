package charttest

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/crowsnest-dev/crowsnest/helm/contract/values"
)

// TestRejectedValues: the schema and the templates refuse unsafe or
// incomplete values with a clear error.
func TestRejectedValues(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"latest tag", []string{"--set", "operator.image.tag=latest"}, "/operator/image/tag"},
		{"unknown DB source", withScan("--set", "global.vulnDB.source=internet"), "source"},
		{"mirror without a URL", withScan("--set", "global.vulnDB.source=url"), "global.vulnDB.source=url needs global.vulnDB.url"},
		{"mirror URL without source=url", withScan("--set", "global.vulnDB.url=https://mirror.example/grype"), "global.vulnDB.url is used only with"},
		{"mirror URL with credentials", withScan("--set", "global.vulnDB.source=url", "--set", "global.vulnDB.url=https://u:p@mirror.example/grype"), "url"},
		{"proxy headers from anyone", withScan("--set", "resultsApi.readAuth.proxy.userHeader=X-Forwarded-User"), "needs trustedCIDRs"},
		{"unknown read auth", withScan("--set", "resultsApi.readAuth.mode=anonymous"), "readAuth"},
		{"two matchers", withScan("--set", "matcher.replicas=2"), "matcher.replicas: 0 or 1"},
		{"notifier without receivers", withScan("--set", "notifier.enabled=true"), "notifier.enabled needs notifier.config.receivers"},
		{"two notifiers", []string{"-f", "test/chart/testdata/values-notifier.yaml", "--set", "notifier.replicas=2"}, "notifier.replicas: 0 or 1"},
		{"no tag and no digest", []string{"--set", "resultsApi.image.tag="}, "resultsApi"},
		{"unknown key", []string{"--set", "operator.replica=2"}, "replica"},
		{"external NATS without URL", []string{"--set", "nats.enabled=false"}, "nats"},
		{"external database without Secret", []string{"--set", "postgres.enabled=false"}, "database"},
		{"clustered bundled NATS", []string{"--set", "nats.replicas=3"}, "replicas"},
		{"bad digest", []string{"--set", "operator.uploaderImage.digest=sha256:abc"}, "digest"},
		{"NATS password as a value", []string{"--set", "global.nats.credentials.operator.password=hunter2"}, "password"},
		{"NATS credentials for the bundled NATS", withScan("--set", "global.nats.credentials.operator.credsSecret.name=op"),
			"global.nats.credentials.operator is for an external NATS"},
		{"NATS user without a password Secret", []string{"--set", "nats.enabled=false", "--set", "global.nats.url=nats://n:4222",
			"--set", "global.nats.credentials.resultsApi.user=api"}, "resultsApi"},
		{"NATS password Secret without a user", []string{"--set", "nats.enabled=false", "--set", "global.nats.url=nats://n:4222",
			"--set", "global.nats.credentials.resultsApi.passwordSecret.name=api"}, "resultsApi"},
		{"scan Pods as the default ServiceAccount", []string{"--set", "global.scan.serviceAccount=default"}, "/global/scan/serviceAccount"},
		{"no scan ServiceAccount", []string{"--set", "global.scan.serviceAccount="}, "/global/scan/serviceAccount"},
		// The templates refuse it too, for renders that skip the schema.
		{"default ServiceAccount without the schema", withScan("--skip-schema-validation", "--set", "global.scan.serviceAccount=default"),
			"must name a dedicated ServiceAccount"},
		// Watching every namespace is a choice, never a default.
		{"no scan namespaces and not cluster-wide", nil,
			"global.scan.namespaces is empty: list the namespaces Crowsnest scans (the operator then gets a Role in each and watches only those), or set operator.clusterWide=true"},
		{"no scan namespaces, without the schema", []string{"--skip-schema-validation"}, "global.scan.namespaces is empty"},
		{"a duplicate scan namespace", []string{"--set", "global.scan.namespaces={team-a,team-a}"}, "/global/scan/namespaces"},
		{"a scan namespace that is no DNS label", []string{"--set", "global.scan.namespaces={Team_A}"}, "/global/scan/namespaces/0"},
		{"Prometheus ServiceAccount without a namespace", withScan("--set", "monitoring.prometheusServiceAccount.name=prometheus"),
			"/monitoring/prometheusServiceAccount"},
		{"a skip check above every report", withScan("--set", "matcher.rematchSkip.checkFraction=1.5"), "/matcher/rematchSkip/checkFraction"},
		{"a negative skip check cap", withScan("--set", "matcher.rematchSkip.checkMax=-1"), "/matcher/rematchSkip/checkMax"},
		{"no port for scan Pods' egress", withScan("--set", "global.networkPolicy.scanEgressPorts={}"), "scanEgressPorts"},
		// Tokens never cross an Ingress in clear text by default.
		{"ingress without TLS", withScan("--set", "resultsApi.ingress.enabled=true"),
			"resultsApi.ingress.enabled without resultsApi.ingress.tlsSecretName: the admin token and people's tokens would cross the Ingress in clear text"},
		{"results-api TLS without a certificate", withScan("--set", "global.resultsApi.tls.enabled=true", "--set", "global.resultsApi.tls.uploaderTrustsCA=true"),
			"global.resultsApi.tls.enabled needs global.resultsApi.tls.secretName"},
		{"results-api TLS from cert-manager without its API", withScan("--set", "global.resultsApi.tls.enabled=true",
			"--set", "global.resultsApi.tls.uploaderTrustsCA=true", "--set", "global.resultsApi.tls.certManager.issuerRef.name=ca"),
			"the cluster does not serve cert-manager.io/v1"},
		{"results-api TLS while scan Jobs' uploader may not trust it", withScan("--set", "global.resultsApi.tls.enabled=true",
			"--set", "global.resultsApi.tls.secretName=api-tls"), "the uploader has no CA option"},
		{"a cert-manager issuer of another kind", withScan("--set", "global.resultsApi.tls.certManager.issuerRef.kind=Vault"), "/global/resultsApi/tls/certManager/issuerRef/kind"},
		{"Postgres password Secret without the URL Secret", withScan("--set", "postgres.existingSecret=pg"), "database"},
		{"Postgres password Secret without the URL Secret, without the schema", withScan("--skip-schema-validation", "--set", "postgres.existingSecret=pg"),
			"postgres.existingSecret needs global.database.existingSecret"},
		// A ClusterScanner needs an operator that sees every namespace.
		{"ClusterScanner without a cluster-wide operator", withScan("--set", "global.clusterScanner.enabled=true"), "/operator/clusterWide"},
		{"ClusterScanner without a cluster-wide operator, without the schema", withScan("--skip-schema-validation", "--set", "global.clusterScanner.enabled=true"),
			"global.clusterScanner.enabled needs operator.clusterWide=true"},
		{"ClusterScanner with an unknown selector operator", append(slices.Clone(clusterScannerArgs),
			"--set", "global.clusterScanner.namespaceSelector.matchExpressions[0].key=a", "--set", "global.clusterScanner.namespaceSelector.matchExpressions[0].operator=Like"),
			"/global/clusterScanner/namespaceSelector/matchExpressions/0/operator"},
		{"NATS creds and a user at once", []string{"--set", "nats.enabled=false", "--set", "global.nats.url=nats://n:4222",
			"--set", "global.nats.credentials.operator.credsSecret.name=op", "--set", "global.nats.credentials.operator.user=op",
			"--set", "global.nats.credentials.operator.passwordSecret.name=op"}, "operator"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Template(ctx, repoRoot, releaseNS, tt.args...)
			if err == nil {
				t.Fatalf("helm template %v succeeded, want an error", tt.args)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not mention %q", err, tt.want)
			}
		})
	}
}

func TestHelmLint(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The defaults alone do not render (no scan namespaces, not cluster-wide).
	for _, args := range [][]string{
		scanTeamA,
		{"--set", "operator.clusterWide=true"},
		withScan("-f", "test/chart/testdata/values-external.yaml"),
		{"-f", "test/chart/testdata/values-everything.yaml"},
		withScan("-f", "test/chart/testdata/values-external-nats-credentials.yaml"),
		withScan("--set", "global.nats.users.existingSecret=my-nats-users"),
		gitOpsSecrets,
		withScan(apiTLSNamed...), // helm lint has no --api-versions: the cert-manager case is a render case only
		{"-f", "deploy/dev/values.yaml"},
		clusterScannerArgs,
	} {
		if out, err := RunHelm(ctx, repoRoot, append([]string{"lint", "--strict", ChartDir}, args...)...); err != nil {
			t.Errorf("helm lint %v: %v\n%s", args, err, out)
		}
	}
}

// TestValuesFile: values.yaml decodes strictly into the Go types the schema
// is generated from, holds no plain-text secret, and the committed schema is
// the generated one.
func TestValuesFile(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot, ChartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var v values.Values
	if err := yaml.UnmarshalStrict(data, &v); err != nil {
		t.Errorf("values.yaml does not match package values: %v", err)
	}
	var tree map[string]any
	if err := yaml.Unmarshal(data, &tree); err != nil {
		t.Fatal(err)
	}
	for _, p := range CheckValuesSecrets(tree) {
		t.Error(p)
	}
	want, err := values.Schema()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(repoRoot, ChartDir, "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Error("helm/crowsnest/values.schema.json is stale: run make generate")
	}
}

// TestGeneratedCopies: the chart's CRD and the operator's RBAC rules are the
// operator's generated files, copied by make generate.
func TestGeneratedCopies(t *testing.T) {
	for src, dst := range map[string]string{
		"operator/config/crd/bases/crowsnest.dev_scanners.yaml":            ChartDir + "/crds/crowsnest.dev_scanners.yaml",
		"operator/config/crd/bases/crowsnest.dev_clusterscanners.yaml":     ChartDir + "/crds/crowsnest.dev_clusterscanners.yaml",
		"operator/config/crd/bases/crowsnest.dev_vexdocuments.yaml":        ChartDir + "/crds/crowsnest.dev_vexdocuments.yaml",
		"operator/config/crd/bases/crowsnest.dev_clustervexdocuments.yaml": ChartDir + "/crds/crowsnest.dev_clustervexdocuments.yaml",
		OperatorRole:       ChartDir + "/charts/operator/files/role.yaml",
		LeaderElectionRole: ChartDir + "/charts/operator/files/leader_election_role.yaml",
	} {
		a, err := os.ReadFile(filepath.Join(repoRoot, src))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(repoRoot, dst))
		if err != nil {
			t.Fatal(err)
		}
		if string(a) != string(b) {
			t.Errorf("%s differs from %s: run make generate", dst, src)
		}
	}
}
