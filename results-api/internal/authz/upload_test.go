package authz_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/crowsnest-dev/crowsnest/api/scan"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/authz"
)

// Plays the attacker against a real kube-apiserver: only the token of the
// scan Pod the operator scheduled for a digest, while its Job runs, may
// upload that digest.
func TestUploadOnlyFromTheDigestsScanPod(t *testing.T) {
	c := newCluster(t)
	var l link
	az, err := authz.New(c.client(&l), authz.Options{ScanServiceAccount: scanSA})
	must(t, err)
	lax, err := authz.New(c.admin, authz.Options{}) // any service account
	must(t, err)

	dA, dB := digest('a'), digest('b')
	jobA := c.scanJob("scan-a", dA)
	podA := c.pod("scan-a-x1", scanSA, jobA, corev1.PodRunning)
	scanA := c.identity(c.token(scanSA, podA))

	t.Run("scan pod uploads its digest", func(t *testing.T) {
		allow(t, az, scanA, dA)
		allow(t, az, scanA, dA) // not cached: the Pod may have changed since
		pods, jobs := l.count("GET /api/v1/namespaces/scans/pods/scan-a-x1"), l.count("GET /apis/batch/v1/namespaces/scans/jobs/scan-a")
		if pods != 2 || jobs != 2 {
			t.Errorf("two uploads made %d pod and %d job GETs, want 2 and 2", pods, jobs)
		}
	})
	t.Run("scan pod uploads another digest", func(t *testing.T) {
		refuse(t, az, scanA, dB, "scans another digest")
	})
	t.Run("workload pod with its own pod-bound token", func(t *testing.T) {
		web := c.pod("web", "default", nil, corev1.PodRunning)
		id := c.identity(c.token("default", web))
		refuse(t, az, id, dA, "is not the scan service account")
		refuse(t, lax, id, dA, "is not controlled by a Job")
	})
	t.Run("scan service account token not bound to a pod", func(t *testing.T) {
		refuse(t, az, c.identity(c.token(scanSA, nil)), dA, "not bound to a pod")
	})
	t.Run("pod of a job the operator did not create", func(t *testing.T) {
		rogue := c.scanJob("rogue", dA, func(j *batchv1.Job) { delete(j.Labels, scan.LabelManagedBy) })
		id := c.identity(c.token(scanSA, c.pod("rogue-x1", scanSA, rogue, corev1.PodRunning)))
		refuse(t, az, id, dA, "is not managed by crowsnest-operator")
	})
	t.Run("scan pod not owned by its job as controller", func(t *testing.T) {
		pod := c.pod("hanger-on", scanSA, nil, corev1.PodRunning)
		pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: jobA.Name, UID: jobA.UID}}
		pod, err := c.admin.CoreV1().Pods(c.ns).Update(c.ctx, pod, metav1.UpdateOptions{})
		must(t, err)
		refuse(t, az, c.identity(c.token(scanSA, pod)), dA, "is not controlled by a Job")
	})
	t.Run("pod recreated with the same name", func(t *testing.T) {
		dC := digest('c')
		job := c.scanJob("scan-c", dC)
		old := c.pod("scan-c-x1", scanSA, job, corev1.PodRunning)
		oldToken := c.token(scanSA, old)
		oldID := c.identity(oldToken) // as authn may still hold it in its cache
		must(t, c.admin.CoreV1().Pods(c.ns).Delete(c.ctx, old.Name, metav1.DeleteOptions{GracePeriodSeconds: ptrTo[int64](0)}))
		fresh := c.pod("scan-c-x1", scanSA, job, corev1.PodRunning)
		if fresh.UID == old.UID {
			t.Fatal("recreated pod kept its uid")
		}
		refuse(t, az, oldID, dC, "was replaced: its uid is not the token's")
		// kube-apiserver caches successful token authentications for 10 s,
		// so TokenReview alone does not refuse the deleted pod's token yet:
		// the uid check above is what does.
		_, stillAuthenticated := c.review(oldToken)
		t.Logf("TokenReview of the deleted pod's token right after: authenticated=%v", stillAuthenticated)
		allow(t, az, c.identity(c.token(scanSA, fresh)), dC)
	})
	t.Run("job replaced under a running pod", func(t *testing.T) {
		dF := digest('f')
		job := c.scanJob("scan-f", dF)
		id := c.identity(c.token(scanSA, c.pod("scan-f-x1", scanSA, job, corev1.PodRunning)))
		allow(t, az, id, dF)
		must(t, c.admin.BatchV1().Jobs(c.ns).Delete(c.ctx, job.Name,
			metav1.DeleteOptions{PropagationPolicy: ptrTo(metav1.DeletePropagationBackground)}))
		c.scanJob("scan-f", dF)
		refuse(t, az, id, dF, "was replaced: it is not the pod's controller")
	})
	t.Run("job finished", func(t *testing.T) {
		dD := digest('d')
		job := c.scanJob("scan-d", dD)
		// Pending: the kubelet may not have reported Running yet.
		id := c.identity(c.token(scanSA, c.pod("scan-d-x1", scanSA, job, corev1.PodPending)))
		allow(t, az, id, dD)
		c.finish(job)
		refuse(t, az, id, dD, "has finished (")
	})
	t.Run("job saw its pod end, no condition yet", func(t *testing.T) {
		dG := digest('g')
		job := c.scanJob("scan-g", dG)
		pod := c.pod("scan-g-x1", scanSA, job, corev1.PodRunning)
		id := c.identity(c.token(scanSA, pod))
		allow(t, az, id, dG)
		// The Job controller's first step once the Pod ends: the Pod in
		// uncountedTerminatedPods, no count, no condition.
		job, err := c.admin.BatchV1().Jobs(c.ns).Get(c.ctx, job.Name, metav1.GetOptions{})
		must(t, err)
		now := metav1.Now()
		job.Status = batchv1.JobStatus{StartTime: &now,
			UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{Succeeded: []types.UID{pod.UID}}}
		_, err = c.admin.BatchV1().Jobs(c.ns).UpdateStatus(c.ctx, job, metav1.UpdateOptions{})
		must(t, err)
		refuse(t, az, id, dG, "has finished (PodTerminated)")
	})
	t.Run("tenant swaps the uploader image of the running scan pod", func(t *testing.T) {
		// What a tenant with edit could patch where the chart's admission
		// policy is not installed: a container's image is mutable.
		dH := digest('1')
		job := c.scanJob("scan-h", dH)
		pod := c.pod("scan-h-x1", scanSA, job, corev1.PodRunning)
		id := c.identity(c.token(scanSA, pod))
		allow(t, az, id, dH) // the real uploader (its upload failed and it retries)
		c.patchPod(pod.Name, `{"spec":{"containers":[{"name":"uploader","image":"registry.example/mallory/uploader:evil"}]}}`)
		refuse(t, az, id, dH, `does not run what its Job scan-h scheduled: its container "uploader" runs image "registry.example/mallory/uploader:evil"`)
	})
	t.Run("tenant swaps the grype image before the upload", func(t *testing.T) {
		dI := digest('2')
		job := c.scanJob("scan-i", dI)
		pod := c.pod("scan-i-x1", scanSA, job, corev1.PodPending)
		c.patchPod(pod.Name, `{"spec":{"initContainers":[{"name":"grype","image":"registry.example/mallory/grype:clean"}]}}`)
		refuse(t, az, c.identity(c.token(scanSA, pod)), dI, `its init container "grype" runs image`)
	})
	t.Run("debug container in the scan pod", func(t *testing.T) {
		dJ := digest('3')
		job := c.scanJob("scan-j", dJ)
		pod := c.pod("scan-j-x1", scanSA, job, corev1.PodRunning)
		pod.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox"}}}
		_, err := c.admin.CoreV1().Pods(c.ns).UpdateEphemeralContainers(c.ctx, pod.Name, pod, metav1.UpdateOptions{})
		must(t, err)
		refuse(t, az, c.identity(c.token(scanSA, pod)), dJ, "it has 1 ephemeral container(s) (debug)")
	})
	t.Run("pod pinned by digest by a mutating webhook", func(t *testing.T) {
		dK := digest('4')
		job := c.scanJob("scan-k", dK)
		pod := c.pod("scan-k-x1", scanSA, job, corev1.PodRunning)
		c.patchPod(pod.Name, `{"spec":{"containers":[{"name":"uploader","image":"registry.example/uploader:v0.1.0@`+digest('9')+`"}]}}`)
		allow(t, az, c.identity(c.token(scanSA, pod)), dK)
	})
	t.Run("pod terminated", func(t *testing.T) {
		dE := digest('e')
		job := c.scanJob("scan-e", dE)
		id := c.identity(c.token(scanSA, c.pod("scan-e-x1", scanSA, job, corev1.PodSucceeded)))
		refuse(t, az, id, dE, "has terminated (Succeeded)")
	})
	t.Run("not a pod-bound service account", func(t *testing.T) {
		refuse(t, az, authz.Identity{Static: true}, dA, "static admin token is not a service account")
		refuse(t, az, authz.Identity{Username: "alice", Extra: scanA.Extra}, dA, "alice is not a service account")
		refuse(t, az, scanA, "", "empty digest")
	})
	t.Run("API server unreachable", func(t *testing.T) {
		var down link
		down.down.Store(true)
		az, err := authz.New(c.client(&down), authz.Options{ScanServiceAccount: scanSA})
		must(t, err)
		unavailable(t, az, scanA, dA)
		unavailable(t, az, scanA, dA) // not cached: asked again
		down.down.Store(false)
		allow(t, az, scanA, dA)
	})
	t.Run("API server throttling or failing", func(t *testing.T) {
		for _, code := range []int{http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusServiceUnavailable} {
			az, err := authz.New(failing(t, code), authz.Options{})
			must(t, err)
			unavailable(t, az, scanA, dA)
		}
	})
}

func allow(t *testing.T, az *authz.Authorizer, id authz.Identity, d string) {
	t.Helper()
	if err := az.AuthorizeUpload(t.Context(), id, d); err != nil {
		t.Fatalf("refused: %v", err)
	}
	t.Logf("allowed %s", d)
}

func refuse(t *testing.T, az *authz.Authorizer, id authz.Identity, d, reason string) {
	t.Helper()
	err := az.AuthorizeUpload(t.Context(), id, d)
	if !errors.Is(err, authz.ErrForbidden) || !strings.Contains(err.Error(), reason) {
		t.Fatalf("got %v, want ErrForbidden saying %q", err, reason)
	}
	t.Logf("refused: %v", err)
}

func unavailable(t *testing.T, az *authz.Authorizer, id authz.Identity, d string) {
	t.Helper()
	err := az.AuthorizeUpload(t.Context(), id, d)
	if !errors.Is(err, authz.ErrUnavailable) || errors.Is(err, authz.ErrForbidden) {
		t.Fatalf("got %v, want ErrUnavailable", err)
	}
	t.Logf("unavailable: %v", err)
}

// failing returns a client of an HTTP server that answers every request
// with code and a Kubernetes Status, as an overloaded or broken API server
// does; a real kube-apiserver cannot be made to fail on demand.
func failing(t *testing.T, code int) kubernetes.Interface {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"injected","code":` + strconv.Itoa(code) + `}`))
	}))
	t.Cleanup(srv.Close)
	return kubernetes.NewForConfigOrDie(&rest.Config{Host: srv.URL})
}

func digest(c byte) string { return "sha256:" + strings.Repeat(string(c), 64) }
