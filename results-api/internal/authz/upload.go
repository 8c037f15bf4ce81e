package authz

import (
	"context"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/crowsnest-dev/crowsnest/api/scan"
)

// jobRef is the scan Job a verified Pod belongs to.
type jobRef struct {
	namespace, name string
	uid             types.UID
}

// AuthorizeUpload allows id to store the report of digest when id is the
// token of the scan Pod the operator scheduled for that digest, running
// what the operator scheduled:
//
//   - the token is bound to a Pod (pod-name and pod-uid extras) and belongs
//     to a service account (Options.ScanServiceAccount, when set);
//   - that Pod, fetched by name in the service account's namespace, has the
//     token's pod UID, runs as the token's service account, is neither
//     terminated (Succeeded/Failed) nor being deleted, and is controlled by a
//     batch/v1 Job;
//   - that Job has the same UID as the Pod's controller reference, carries
//     scan.LabelManagedBy=scan.ManagedBy and scan.AnnotationDigest=digest, is
//     not being deleted and has no terminal condition (Complete, Failed,
//     SuccessCriteriaMet, FailureTarget) set to True;
//   - the Pod's containers are the Job template's: images, commands and
//     args (templateMismatch). An image is mutable on a running Pod.
//
// The labels and the Pod's service account are what a tenant who may
// create Jobs or Pods in the namespace could copy, and the image what one
// who may patch Pods could swap; the chart's admission policy
// <release>-scan-identity is what keeps them to the operator and the Job
// controller (docs/deploy.md).
//
// A Pod that is still Pending is allowed: the uploader is the main container
// and starts right after Grype's init container, often before the kubelet
// has reported the Pod Running.
//
// The Pod and the Job are fetched on every call (no verdict is cached: a
// cached Pod would not show an image swapped after an earlier upload), so
// a finished, deleted, replaced or changed Pod or Job is refused at once.
// TokenReview stops authenticating the token of a deleted Pod after
// kube-apiserver's own 10 s cache of successful authentications; the UID
// check refuses a Pod recreated under the same name before that.
func (a *Authorizer) AuthorizeUpload(ctx context.Context, id Identity, digest string) error {
	if digest == "" {
		return fmt.Errorf("%w: empty digest", ErrForbidden)
	}
	ns, sa, ok := id.ServiceAccount()
	if id.Static || !ok {
		return fmt.Errorf("%w: %s is not a service account", ErrForbidden, id.subject())
	}
	podName, podUID, ok := id.BoundPod()
	if !ok {
		return fmt.Errorf("%w: token of %s is not bound to a pod", ErrForbidden, id.Username)
	}
	if a.o.ScanServiceAccount != "" && sa != a.o.ScanServiceAccount {
		return fmt.Errorf("%w: %s is not the scan service account %q", ErrForbidden, id.Username, a.o.ScanServiceAccount)
	}
	pod, ref, err := a.scanPod(ctx, ns, sa, podName, types.UID(podUID))
	if err != nil {
		return err
	}
	job, err := a.scanJob(ctx, ref, digest)
	if err != nil {
		return err
	}
	if why := templateMismatch(pod, &job.Spec.Template.Spec); why != "" {
		return fmt.Errorf("%w: pod %s/%s does not run what its Job %s scheduled: %s", ErrForbidden, ns, podName, job.Name, why)
	}
	return nil
}

// scanPod fetches the token's Pod and returns it and its controlling Job.
func (a *Authorizer) scanPod(ctx context.Context, ns, sa, name string, uid types.UID) (*corev1.Pod, jobRef, error) {
	what := "pod " + ns + "/" + name
	cctx, cancel := a.callContext(ctx)
	defer cancel()
	pod, err := a.client.CoreV1().Pods(ns).Get(cctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, jobRef{}, apiError(what, err)
	}
	if pod.UID != uid {
		return nil, jobRef{}, fmt.Errorf("%w: %s was replaced: its uid is not the token's", ErrForbidden, what)
	}
	if pod.DeletionTimestamp != nil {
		return nil, jobRef{}, fmt.Errorf("%w: %s is being deleted", ErrForbidden, what)
	}
	if p := pod.Status.Phase; p == corev1.PodSucceeded || p == corev1.PodFailed {
		return nil, jobRef{}, fmt.Errorf("%w: %s has terminated (%s)", ErrForbidden, what, p)
	}
	podSA := pod.Spec.ServiceAccountName
	if podSA == "" {
		podSA = "default" // what the ServiceAccount admission plugin fills in
	}
	if podSA != sa {
		return nil, jobRef{}, fmt.Errorf("%w: %s runs as %q, the token is of %q", ErrForbidden, what, podSA, sa)
	}
	ctrl := metav1.GetControllerOfNoCopy(pod)
	if ctrl == nil || ctrl.Kind != "Job" || ctrl.Name == "" || ctrl.UID == "" || !isBatch(ctrl.APIVersion) {
		return nil, jobRef{}, fmt.Errorf("%w: %s is not controlled by a Job", ErrForbidden, what)
	}
	return pod, jobRef{namespace: ns, name: ctrl.Name, uid: ctrl.UID}, nil
}

// scanJob fetches the Pod's Job and checks that it is the operator's scan
// Job for digest and still running; it returns the Job.
func (a *Authorizer) scanJob(ctx context.Context, ref jobRef, digest string) (*batchv1.Job, error) {
	what := "job " + ref.namespace + "/" + ref.name
	cctx, cancel := a.callContext(ctx)
	defer cancel()
	job, err := a.client.BatchV1().Jobs(ref.namespace).Get(cctx, ref.name, metav1.GetOptions{})
	if err != nil {
		return nil, apiError(what, err)
	}
	switch {
	case job.UID != ref.uid:
		return nil, fmt.Errorf("%w: %s was replaced: it is not the pod's controller", ErrForbidden, what)
	case job.Labels[scan.LabelManagedBy] != scan.ManagedBy:
		return nil, fmt.Errorf("%w: %s is not managed by %s", ErrForbidden, what, scan.ManagedBy)
	case job.Annotations[scan.AnnotationDigest] != digest:
		return nil, fmt.Errorf("%w: %s scans another digest than %s", ErrForbidden, what, digest)
	case job.DeletionTimestamp != nil:
		return nil, fmt.Errorf("%w: %s is being deleted", ErrForbidden, what)
	}
	if c, done := finished(job); done {
		return nil, fmt.Errorf("%w: %s has finished (%s)", ErrForbidden, what, c)
	}
	return job, nil
}

// finished reports the first terminal (or about to be terminal) condition
// of job that is True, or that one of its Pods has terminated: a scan Job
// runs one Pod with backoffLimit 0, so the Job is done the moment the Job
// controller sees that Pod end, before it sets a condition, and before the
// kubelet's Pod status may have reached the API server.
func finished(job *batchv1.Job) (batchv1.JobConditionType, bool) {
	if u := job.Status.UncountedTerminatedPods; job.Status.Succeeded > 0 || job.Status.Failed > 0 ||
		(u != nil && len(u.Succeeded)+len(u.Failed) > 0) {
		return "PodTerminated", true
	}
	for _, c := range job.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete, batchv1.JobFailed, batchv1.JobSuccessCriteriaMet, batchv1.JobFailureTarget:
			return c.Type, true
		}
	}
	return "", false
}

func isBatch(apiVersion string) bool {
	gv, err := schema.ParseGroupVersion(apiVersion)
	return err == nil && gv.Group == batchv1.GroupName
}
