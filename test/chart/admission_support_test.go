package charttest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"
)

// goldenImageArgs set the chart's scan images to the ones the operator's
// golden scan Jobs (operator/internal/scanjob/testdata) run, the custom
// one's Scanner grypeImage among the extra scan images, so that the
// operator's real Jobs are what the scan-operator policy must admit.
var goldenImageArgs = []string{
	"--set", "operator.uploaderImage.repository=ghcr.io/crowsnest-dev/uploader", "--set", "operator.uploaderImage.tag=v0.1.0",
	"--set", "operator.grypeImage.repository=ghcr.io/crowsnest-dev/crowsnest-grype", "--set", "operator.grypeImage.tag=v0.121.2",
	"--set", "global.scan.admissionPolicy.extraScanImages={registry.example/grype:*}",
}

// goldenJob is the operator's own scan Job as scanjob.Build renders it
// (its golden file "default" or "custom"), moved to namespace ns, running
// as the chart's scan ServiceAccount (the "default" file is rendered
// without one; the chart always passes --scan-service-account). Read as a
// file, not imported: test/chart does not compile the operator.
func goldenJob(t *testing.T, name, ns string) *batchv1.Job {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "operator", "internal", "scanjob", "testdata", name+".golden.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var j batchv1.Job
	if err := yaml.UnmarshalStrict(b, &j); err != nil {
		t.Fatalf("golden Job %s: %v", name, err)
	}
	j.Namespace = ns
	j.Status = batchv1.JobStatus{}
	j.Spec.Template.Spec.ServiceAccountName = "crowsnest-scan"
	return &j
}

// applyScanPolicies applies the release's RBAC and admission policies and
// deletes the policies when the test ends: they are cluster-wide and name
// this release's operator, so another test's operator would be refused
// its scan Jobs by them.
func applyScanPolicies(ctx context.Context, t *testing.T, admin kubernetes.Interface, release, ns string, args ...string) {
	t.Helper()
	t.Cleanup(func() {
		ctx := context.Background()
		for _, p := range []string{"-scan-identity", "-scan-operator"} {
			_ = admin.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(ctx, release+p, metav1.DeleteOptions{})
			_ = admin.AdmissionregistrationV1().ValidatingAdmissionPolicies().Delete(ctx, release+p, metav1.DeleteOptions{})
		}
		// The API server unloads them asynchronously too: wait (bounded)
		// until a Job as the scan ServiceAccount passes again.
		probe := scanJob(ns, "probe", "crowsnest-scan", false)
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			if _, err := admin.BatchV1().Jobs(ns).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err == nil {
				return
			}
		}
		t.Errorf("the policies of release %s still refuse a Job as the scan ServiceAccount 30s after their deletion", release)
	})
	applyKinds(ctx, t, release, ns, []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
		"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}, args...)
}

// waitRefused waits (bounded) until probe is refused with a message that
// contains refusal: the API server loads a new policy asynchronously, and a
// policy only ever refuses, so everything checked after that sees it in
// force.
func waitRefused(t *testing.T, what, refusal string, probe func() error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := probe()
		if err != nil && strings.Contains(err.Error(), refusal) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the policy is not in force after 30s: %s gets %v", what, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// policyExists tells whether the release rendered and applied the policy
// <release>-<suffix> (a test run against an older chart may lack it).
func policyExists(ctx context.Context, admin kubernetes.Interface, name string) bool {
	_, err := admin.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, name, metav1.GetOptions{})
	return err == nil
}

// verdict checks err against want: nil when want is "", a refusal that
// contains want otherwise.
func verdict(t *testing.T, name string, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("%s: refused: %v", name, err)
	case want != "" && err == nil:
		t.Errorf("%s: allowed, want refused by the policy", name)
	case want != "" && !strings.Contains(err.Error(), want):
		t.Errorf("%s: %v, want the policy's refusal %q", name, err, want)
	default:
		t.Logf("%s: %v", name, err)
	}
}
