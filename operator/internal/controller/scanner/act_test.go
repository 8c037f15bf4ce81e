package scanner

import (
	"context"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crowsnest-dev/crowsnest/operator/internal/scanjob"
)

// TestAnnotateVanishedJobIsNotAnError: a Job deleted between the observe
// and the act step (its TTL ran out) has nothing left to annotate, which is
// no reason to fail the reconcile; any other refusal still is one.
func TestAnnotateVanishedJobIsNotAnError(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	r := &Reconciler{Client: k8s}
	gone := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "gone", Namespace: ns}}
	if err := r.annotate(ctx, gone, map[string]string{scanjob.AnnotationPublished: publishedNeeded}); err != nil {
		t.Errorf("annotating a deleted Job: %v", err)
	}

	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "here", Namespace: ns}, Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "x", Image: "busybox"}}}}}}
	if err := k8s.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	if err := r.annotate(ctx, job, map[string]string{scanjob.AnnotationPublished: publishedNeeded}); err != nil {
		t.Fatalf("annotating a Job: %v", err)
	}
	if job.Annotations[scanjob.AnnotationPublished] != publishedNeeded {
		t.Errorf("annotations %v", job.Annotations)
	}
	err := r.annotate(ctx, job, map[string]string{"not a valid key!": "x"})
	if err == nil || !strings.Contains(err.Error(), "annotate scan job here") {
		t.Errorf("an invalid annotation gave %v, want the API server's refusal", err)
	}
}
