package scanner

import (
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/crowsnest-dev/crowsnest/api/scan"
	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
	"github.com/crowsnest-dev/crowsnest/operator/internal/scanjob"
)

// jobPhase is where a scan Job stands.
type jobPhase int

const (
	jobActive jobPhase = iota
	jobSucceeded
	jobFailed
)

// jobResult is a Job's phase, and for a finished Job when and why.
type jobResult struct {
	phase      jobPhase
	finishedAt time.Time
	reason     string // a crowsnestv1alpha1.Failure* reason when failed
	message    string
}

// jobOutcome reads a Job's conditions; for a failed Job it explains the
// failure from its Pods' container states. A Job deleted before it finished
// (by a user: the TTL controller only deletes finished Jobs) counts as a
// failed attempt, so that it is retried with backoff rather than at once;
// its finalizer keeps it until then.
func jobOutcome(job *batchv1.Job, pods []corev1.Pod) jobResult {
	for _, c := range job.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return jobResult{phase: jobSucceeded, finishedAt: c.LastTransitionTime.Time}
		case batchv1.JobFailed:
			r := jobResult{phase: jobFailed, finishedAt: c.LastTransitionTime.Time}
			if c.Reason == batchv1.JobReasonDeadlineExceeded {
				r.reason, r.message = crowsnestv1alpha1.FailureDeadlineExceeded, c.Message
				return r
			}
			r.reason, r.message = classifyPods(pods)
			if r.reason == "" {
				r.reason, r.message = crowsnestv1alpha1.FailureJob, strings.TrimSpace(c.Reason+": "+c.Message)
			}
			return r
		}
	}
	if job.DeletionTimestamp != nil {
		return jobResult{phase: jobFailed, finishedAt: job.DeletionTimestamp.Time, reason: crowsnestv1alpha1.FailureJob,
			message: "the Job was deleted before it finished"}
	}
	return jobResult{phase: jobActive}
}

// classifyPods explains a failed scan from the newest Pod's containers.
func classifyPods(pods []corev1.Pod) (reason, message string) {
	var newest *corev1.Pod
	for i := range pods {
		if newest == nil || pods[i].CreationTimestamp.After(newest.CreationTimestamp.Time) {
			newest = &pods[i]
		}
	}
	if newest == nil {
		return "", ""
	}
	for _, cs := range append(append([]corev1.ContainerStatus{}, newest.Status.InitContainerStatuses...), newest.Status.ContainerStatuses...) {
		if w := cs.State.Waiting; w != nil && waitingFailures[w.Reason] != "" {
			return waitingFailures[w.Reason], cs.Name + ": " + w.Reason + ": " + w.Message
		}
		t := cs.State.Terminated
		if t == nil || (t.ExitCode == 0 && t.Reason != "OOMKilled") {
			continue
		}
		msg := strings.TrimSpace(t.Message)
		if t.Reason == "OOMKilled" {
			return crowsnestv1alpha1.FailureOOMKilled, cs.Name + " was killed for using too much memory; raise spec.resources.limits.memory"
		}
		if cs.Name == scanjob.ContainerDockerConfig {
			return crowsnestv1alpha1.FailurePullSecretInvalid, msg
		}
		if cs.Name == scanjob.ContainerGrype {
			if isRegistryFailure(msg) {
				return crowsnestv1alpha1.FailureImagePull, msg
			}
			return crowsnestv1alpha1.FailureGrype, msg
		}
		switch t.ExitCode {
		case scan.ExitInvalidReport:
			return crowsnestv1alpha1.FailureReportInvalid, msg
		case scan.ExitRejected:
			return crowsnestv1alpha1.FailureReportRejected, msg
		case scan.ExitUnreachable:
			return crowsnestv1alpha1.FailureAPIUnreachable, msg
		case scan.ExitTokenInvalid:
			return crowsnestv1alpha1.FailureTokenInvalid, msg
		}
		return crowsnestv1alpha1.FailureUploader, msg
	}
	return "", ""
}

// waitingFailures are the waiting reasons of a scan Pod's containers that
// do not get better on their own, and the failure each amounts to. A pull
// failure is always one of the scan Pod's own images (Grype, uploader,
// docker-config): the kubelet never pulls the scanned image, Grype fetches
// it over the registry API ("registry:" in scanjob.Build), and its failure
// to do so ends Grype with a message isRegistryFailure reads as
// ImagePullFailed.
var waitingFailures = map[string]string{
	"ErrImagePull":               crowsnestv1alpha1.FailureScannerImagePull,
	"ImagePullBackOff":           crowsnestv1alpha1.FailureScannerImagePull,
	"InvalidImageName":           crowsnestv1alpha1.FailureScannerImagePull,
	"ErrImageNeverPull":          crowsnestv1alpha1.FailureScannerImagePull,
	"CreateContainerConfigError": crowsnestv1alpha1.FailureScanPodConfig,
}

// isRegistryFailure spots Grype failing to fetch the scanned image, from the
// last lines of its log that the kubelet put in the termination message.
func isRegistryFailure(msg string) bool {
	m := strings.ToLower(msg)
	for _, s := range []string{"unauthorized", "authentication required", "denied", "manifest unknown", "name unknown", "401", "403", "failed to get image descriptor", "unable to pull"} {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}
