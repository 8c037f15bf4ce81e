package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crowsnest-dev/crowsnest/api/scan"
	"github.com/crowsnest-dev/crowsnest/test/stack/internal/registry"
	"github.com/crowsnest-dev/crowsnest/test/stack/internal/workload"
)

// TestUploadsOnlyFromTheirScan plays an attacker with a foothold in a
// scanned namespace: every token it can get there — a workload Pod's own
// projected token, the scan service account's token not bound to a Pod, the
// token of a scan Pod while it runs (for another digest than its own), the
// same token once the scan has finished — is refused for PUT and DELETE, and
// the stored report is unchanged. The scan runs on the real node; it is held
// the way a slow registry holds one in a cluster (Registry.Hold: Grype's pull
// of the scanned image waits), so the test acts while the Pod runs with its
// kubelet-mounted token, however fast scans are. It runs after
// TestScanLifecycle (file order), whose alpine report it tries to overwrite.
func TestUploadsOnlyFromTheirScan(t *testing.T) {
	needFull(t)
	ctx := withTimeout(t, 4*time.Minute)
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

	own := pushVariant(ctx, t, "trust-held")
	release := shared.Registry.Hold(own.Digest)
	defer release() // a failing test leaves no Pod held
	if err := shared.Client.Create(ctx, workload.Scanner(ns, 1, 0)); err != nil {
		t.Fatal(err)
	}
	if err := shared.Client.Create(ctx, workload.Pod(ns, "scanned", own.Ref(), false)); err != nil {
		t.Fatal(err)
	}
	scanPod := heldScanPod(ctx, t, ns, own.Digest)
	// The token the kubelet mounted into the scan Pod: what a tenant who
	// execs into it, or reads its volume, holds.
	scanToken, err := shared.PodToken(scanPod, "token")
	if err != nil {
		t.Fatal(err)
	}

	forbidden, unauthorized := []int{http.StatusForbidden}, []int{http.StatusUnauthorized}
	attempts(ctx, t, bom, []attempt{
		{"a workload Pod's own token, PUT", http.MethodPut, workloadToken, alpine.Digest, forbidden},
		{"a workload Pod's own token, DELETE", http.MethodDelete, workloadToken, alpine.Digest, forbidden},
		{"the scan service account, not bound to a Pod", http.MethodPut, unbound, alpine.Digest, forbidden},
		{"a running scan Pod's token, another digest", http.MethodPut, scanToken, alpine.Digest, forbidden},
		{"a running scan Pod's token, DELETE", http.MethodDelete, scanToken, alpine.Digest, forbidden},
		{"no token", http.MethodPut, "", alpine.Digest, unauthorized},
	})
	if _, err := getReport(ctx, own.Digest); err == nil {
		t.Fatal("the held scan's report is stored: its uploader ran while held")
	}

	// Released, the same Pod stores its own digest's report: the token that
	// was refused above was one of a scan Pod allowed to upload.
	release()
	var stored *reportSummary
	eventually(t, time.Minute, "the released scan's report", func() error {
		stored, err = getReport(ctx, own.Digest)
		return err
	})
	scanFinished(ctx, t, scanPod)

	// Once the scan has finished its token is refused, with one of two codes
	// depending on how far clean-up has got, which the operator's and the
	// GC's timing decide: 403 while the Pod object still exists in a
	// terminal phase (TokenReview authenticates the token, the Pod and Job
	// checks refuse it); 401 once the operator has retired the Job and the
	// GC has deleted the Pod, because TokenReview no longer authenticates a
	// token bound to a deleted Pod. Every other case keeps its exact code.
	finished := []int{http.StatusUnauthorized, http.StatusForbidden}
	attempts(ctx, t, bom, []attempt{
		{"a finished scan Pod's token, its own digest", http.MethodPut, scanToken, own.Digest, finished},
		{"a finished scan Pod's token, another digest", http.MethodPut, scanToken, alpine.Digest, finished},
		{"a finished scan Pod's token, DELETE", http.MethodDelete, scanToken, alpine.Digest, finished},
	})
	unchanged(ctx, t, alpine.Digest, before)
	unchanged(ctx, t, own.Digest, stored)

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

// attempt is one write an attacker tries, and the statuses it may get.
type attempt struct {
	name, method, token, digest string
	want                        []int
}

func attempts(ctx context.Context, t *testing.T, bom []byte, as []attempt) {
	t.Helper()
	for _, a := range as {
		status := write(ctx, t, a.method, a.digest, a.token, bom)
		switch {
		case !slices.Contains(a.want, status):
			t.Errorf("%s: %d, want one of %v", a.name, status, a.want)
		case len(a.want) > 1:
			t.Logf("%s: %d", a.name, status)
		}
	}
}

// unchanged fails the test when digest's report is gone or was replaced.
func unchanged(ctx context.Context, t *testing.T, digest string, before *reportSummary) {
	t.Helper()
	after, err := getReport(ctx, digest)
	if err != nil {
		t.Errorf("the report of %s is gone: %v", digest, err)
		return
	}
	if !after.ScannedAt.Equal(before.ScannedAt) {
		t.Errorf("the report of %s changed: scanned at %s, was %s", digest, after.ScannedAt, before.ScannedAt)
	}
}

// pushVariant pushes an image with a digest nobody has scanned.
func pushVariant(ctx context.Context, t *testing.T, name string) registry.Image {
	t.Helper()
	b, err := registry.Variant(name)
	if err != nil {
		t.Fatal(err)
	}
	img, err := shared.Registry.Push(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// heldScanPod waits for the scan Pod of digest in ns to run its Grype,
// stalled on the registry's hold of the scanned image (it stays so until
// released): the Pod is live, its token mounted, its uploader not started.
func heldScanPod(ctx context.Context, t *testing.T, ns, digest string) corev1.Pod {
	t.Helper()
	selector := scan.LabelDigestHash + "=" + scan.DigestHash(digest)
	var pod corev1.Pod
	eventually(t, 2*time.Minute, "a scan Pod for "+digest+" stalled on the registry", func() error {
		pods, err := shared.Cluster.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return err
		}
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodFailed {
				t.Fatalf("scan Pod %s failed before its uploader ran: %v", p.Name, p.Status.InitContainerStatuses)
			}
			if grypeRunning(p) && shared.Registry.Held(digest) > 0 {
				pod = p
				return nil
			}
		}
		return fmt.Errorf("%d scan Pods (%s), none stalled on the registry (%d held pulls)", len(pods.Items), selector, shared.Registry.Held(digest))
	})
	return pod
}

// grypeRunning tells whether the scan Pod's grype init container runs.
func grypeRunning(p corev1.Pod) bool {
	for _, s := range p.Status.InitContainerStatuses {
		if s.Name == "grype" {
			return s.State.Running != nil
		}
	}
	return false
}

// scanFinished waits until pod has terminated or is gone, and so has its
// Job. The Job matters: results-api caches a Pod it has verified for that
// Pod's digest and checks the Job live on every upload, so between the
// Pod's end and the Job controller marking the Job finished the token would
// still store its own digest's report.
func scanFinished(ctx context.Context, t *testing.T, pod corev1.Pod) {
	t.Helper()
	job := metav1.GetControllerOf(&pod)
	if job == nil {
		t.Fatalf("scan Pod %s has no Job", pod.Name)
	}
	eventually(t, time.Minute, "scan Pod "+pod.Name+" and its Job finished", func() error {
		p, err := shared.Cluster.Client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return err
		case p.UID == pod.UID && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed:
			return fmt.Errorf("scan Pod %s is %s", p.Name, p.Status.Phase)
		}
		j, err := shared.Cluster.Client.BatchV1().Jobs(pod.Namespace).Get(ctx, job.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return err
		case j.UID != job.UID || j.DeletionTimestamp != nil:
			return nil
		}
		for _, c := range j.Status.Conditions {
			switch c.Type {
			case batchv1.JobComplete, batchv1.JobFailed, batchv1.JobSuccessCriteriaMet, batchv1.JobFailureTarget:
				if c.Status == corev1.ConditionTrue {
					return nil
				}
			}
		}
		return fmt.Errorf("job %s has not finished", j.Name)
	})
}

func write(ctx context.Context, t *testing.T, method, digest, token string, body []byte) int {
	t.Helper()
	var rd *bytes.Reader
	if method == http.MethodPut {
		rd = bytes.NewReader(body)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, err := http.NewRequestWithContext(ctx, method, fmt.Sprintf("%s/api/v1/reports/%s", shared.URL(), digest), rd)
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
