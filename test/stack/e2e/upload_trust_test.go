package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crowsnest-dev/crowsnest/test/stack/internal/registry"
	"github.com/crowsnest-dev/crowsnest/test/stack/internal/workload"
)

// TestUploadsOnlyFromTheirScan plays an attacker with a foothold in a
// scanned namespace: every token it can get there — a workload Pod's own
// projected token, the scan service account's token not bound to a Pod, the
// token of a scan Pod that has finished — is refused for PUT and DELETE,
// and the stored report is unchanged. It runs after TestScanLifecycle (file
// order), whose alpine report it tries to overwrite.
func TestUploadsOnlyFromTheirScan(t *testing.T) {
	needFull(t)
	if shared.Options.UploadToken != "serviceaccount" {
		t.Fatal("the trust scenarios need the stack's TokenReview mode (upload token serviceaccount)")
	}
	ctx := withTimeout(t, 3*time.Minute)
	alpine := image(t, "alpine")
	before, err := getReport(ctx, alpine.Digest)
	if err != nil {
		t.Fatalf("TestScanLifecycle should have scanned alpine: %v", err)
	}
	bom, err := os.ReadFile(filepath.Join(shared.Options.Root, "results-api", "testdata", "grype", "clean.cdx.json"))
	if err != nil {
		t.Fatal(err)
	}

	ns := "e2e-trust"
	if err := workload.EnsureNamespace(ctx, shared.Client, ns); err != nil {
		t.Fatal(err)
	}
	victim := workload.Pod(ns, "web", alpine.Ref(), false)
	if err := shared.Client.Create(ctx, victim); err != nil {
		t.Fatal(err)
	}
	workloadToken, err := shared.ServiceAccountToken(ctx, ns, "default", victim.Name, string(victim.UID))
	if err != nil {
		t.Fatal(err)
	}
	unbound, err := shared.ServiceAccountToken(ctx, ns, workload.ScanServiceAccount, "", "")
	if err != nil {
		t.Fatal(err)
	}
	finished, finishedDigest := finishedScanPod(ctx, t, ns)
	finishedToken, err := shared.ServiceAccountToken(ctx, ns, finished.Spec.ServiceAccountName, finished.Name, string(finished.UID))
	if err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		name, method, token, digest string
	}{
		{"a workload Pod's own token, PUT", http.MethodPut, workloadToken, alpine.Digest},
		{"a workload Pod's own token, DELETE", http.MethodDelete, workloadToken, alpine.Digest},
		{"the scan service account, not bound to a Pod", http.MethodPut, unbound, alpine.Digest},
		{"a finished scan Pod's token, its own digest", http.MethodPut, finishedToken, finishedDigest},
		{"a finished scan Pod's token, another digest", http.MethodPut, finishedToken, alpine.Digest},
		{"a finished scan Pod's token, DELETE", http.MethodDelete, finishedToken, alpine.Digest},
		{"no token", http.MethodPut, "", alpine.Digest},
	} {
		status := write(ctx, t, c.method, c.digest, c.token, bom)
		want := http.StatusForbidden
		if c.token == "" {
			want = http.StatusUnauthorized
		}
		if status != want {
			t.Errorf("%s: %d, want %d", c.name, status, want)
		}
	}
	after, err := getReport(ctx, alpine.Digest)
	if err != nil {
		t.Fatalf("alpine's report is gone: %v", err)
	}
	if !after.ScannedAt.Equal(before.ScannedAt) {
		t.Errorf("alpine's report changed: scanned at %s, was %s", after.ScannedAt, before.ScannedAt)
	}
	// The static admin token still writes in TokenReview mode (CI uploads):
	// a report for a digest nothing runs, deleted again.
	spare := "sha256:" + fmt.Sprintf("%064x", time.Now().UnixNano())
	if status := write(ctx, t, http.MethodPut, spare, shared.AdminToken(), bom); status != http.StatusCreated {
		t.Errorf("admin token PUT: %d, want 201", status)
	}
	if status := write(ctx, t, http.MethodDelete, spare, shared.AdminToken(), nil); status != http.StatusNoContent {
		t.Errorf("admin token DELETE: %d, want 204", status)
	}
}

// finishedScanPod has the operator scan a new digest in ns and returns the
// scan Pod once its Job has finished (before the Job's TTL removes it), and
// the digest.
func finishedScanPod(ctx context.Context, t *testing.T, ns string) (corev1.Pod, string) {
	t.Helper()
	b, err := registry.Variant("trust-finished")
	if err != nil {
		t.Fatal(err)
	}
	img, err := shared.Registry.Push(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if err := shared.Client.Create(ctx, workload.Scanner(ns, 1, 0)); err != nil {
		t.Fatal(err)
	}
	if err := shared.Client.Create(ctx, workload.Pod(ns, "finished", img.Ref(), false)); err != nil {
		t.Fatal(err)
	}
	var pod corev1.Pod
	eventually(t, 2*time.Minute, "a finished scan Job", func() error {
		jobs, err := shared.Cluster.Client.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, j := range jobs.Items {
			if j.Annotations["crowsnest.dev/digest"] != img.Digest || j.Status.Succeeded == 0 {
				continue
			}
			pods, err := shared.Cluster.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + j.Name})
			if err != nil {
				return fmt.Errorf("list the Pods of job %s: %w", j.Name, err)
			}
			if len(pods.Items) == 0 {
				return fmt.Errorf("job %s finished, its Pod not listed yet", j.Name)
			}
			pod = pods.Items[0]
			return nil
		}
		return fmt.Errorf("no finished scan Job for %s yet", img.Digest)
	})
	return pod, img.Digest
}

func write(ctx context.Context, t *testing.T, method, digest, token string, body []byte) int {
	t.Helper()
	var rd *bytes.Reader
	if method == http.MethodPut {
		rd = bytes.NewReader(body)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, err := http.NewRequestWithContext(ctx, method, fmt.Sprintf("%s/api/v1/reports/%s", shared.API.URL(), digest), rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/vnd.cyclonedx+json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
