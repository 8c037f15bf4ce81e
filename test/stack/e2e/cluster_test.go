package e2e

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/crowsnest-dev/crowsnest/test/stack/internal/workload"
)

// TestClusterRunsPodsWithImageIDs: Pods are scheduled onto kwok Nodes, run,
// and report the registry digest of their image as imageID.
func TestClusterRunsPodsWithImageIDs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c := shared.Cluster.Client
	ns := "cluster-pods"
	if err := workload.EnsureNamespace(ctx, shared.Client, ns); err != nil {
		t.Fatal(err)
	}
	alpine, ok := shared.Registry.Lookup("alpine")
	if !ok {
		t.Fatal("no alpine demo image")
	}
	// The registry serves the image by digest.
	ref, err := name.ParseReference(alpine.ImageID(), name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := remote.Get(ref, remote.WithContext(ctx)); err != nil {
		t.Fatalf("pull %s: %v", ref, err)
	}
	if _, err := c.CoreV1().Pods(ns).Create(ctx, workload.Pod(ns, "p", alpine.Ref(), false), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "pod running with imageID", func() error {
		p, err := c.CoreV1().Pods(ns).Get(ctx, "p", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Spec.NodeName == "" || p.Status.Phase != corev1.PodRunning {
			return fmt.Errorf("node %q phase %s", p.Spec.NodeName, p.Status.Phase)
		}
		if len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].ImageID != alpine.ImageID() {
			return fmt.Errorf("container statuses %+v", p.Status.ContainerStatuses)
		}
		return nil
	})
}

// TestClusterCompletesAndCleansJobs: the Job controller creates the Pod,
// kwok completes it, and the TTL controller deletes the finished Job.
func TestClusterCompletesAndCleansJobs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	ns := "cluster-jobs"
	if err := workload.EnsureNamespace(ctx, shared.Client, ns); err != nil {
		t.Fatal(err)
	}
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: ns},
		Spec: batchv1.JobSpec{
			TTLSecondsAfterFinished: ptr.To[int32](3),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "c", Image: "busybox"}},
			}},
		},
	}
	if _, err := shared.Cluster.Client.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	completed := false
	eventually(t, 60*time.Second, "job completed, then deleted by its TTL", func() error {
		j, err := shared.Cluster.Client.BatchV1().Jobs(ns).Get(ctx, "hello", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			if !completed {
				return errors.New("job vanished before it was seen complete")
			}
			return nil
		}
		if err != nil {
			return err
		}
		if j.Status.Succeeded == 1 {
			completed = true
		}
		return fmt.Errorf("job status %+v", j.Status)
	})
}
