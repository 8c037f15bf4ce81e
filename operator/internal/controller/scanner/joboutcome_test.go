package scanner

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
)

func finishedJob(typ batchv1.JobConditionType, reason string) *batchv1.Job {
	return &batchv1.Job{Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{
		{Type: typ, Status: corev1.ConditionTrue, Reason: reason, Message: "m", LastTransitionTime: metav1.NewTime(t0)},
	}}}
}

func deleting(job *batchv1.Job) *batchv1.Job {
	job.DeletionTimestamp = ptr.To(metav1.NewTime(t0.Add(time.Hour)))
	return job
}

func scanPod(grype, uploader corev1.ContainerState) corev1.Pod {
	return corev1.Pod{Status: corev1.PodStatus{
		InitContainerStatuses: []corev1.ContainerStatus{{Name: "grype", State: grype}},
		ContainerStatuses:     []corev1.ContainerStatus{{Name: "uploader", State: uploader}},
	}}
}

func exited(code int32, reason, msg string) corev1.ContainerState {
	return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, Message: msg}}
}

func waiting(reason string) corev1.ContainerState {
	return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}
}

func TestJobOutcome(t *testing.T) {
	ok := exited(0, "Completed", "")
	tests := []struct {
		name   string
		job    *batchv1.Job
		pods   []corev1.Pod
		phase  jobPhase
		reason string
	}{
		{"running", &batchv1.Job{}, nil, jobActive, ""},
		{"complete", finishedJob(batchv1.JobComplete, ""), nil, jobSucceeded, ""},
		{"deadline", finishedJob(batchv1.JobFailed, batchv1.JobReasonDeadlineExceeded), []corev1.Pod{scanPod(exited(1, "Error", "x"), waiting("PodInitializing"))}, jobFailed, crowsnestv1alpha1.FailureDeadlineExceeded},
		{"grype oom", finishedJob(batchv1.JobFailed, "BackoffLimitExceeded"), []corev1.Pod{scanPod(exited(137, "OOMKilled", ""), waiting("PodInitializing"))}, jobFailed, crowsnestv1alpha1.FailureOOMKilled},
		{"grype auth", finishedJob(batchv1.JobFailed, "BackoffLimitExceeded"), []corev1.Pod{scanPod(exited(1, "Error", "failed to get image descriptor from registry: GET https://r/v2/x/manifests/sha256:..: UNAUTHORIZED: authentication required"), waiting("PodInitializing"))}, jobFailed, crowsnestv1alpha1.FailureImagePull},
		{"grype other", finishedJob(batchv1.JobFailed, "BackoffLimitExceeded"), []corev1.Pod{scanPod(exited(1, "Error", "db load failed"), waiting("PodInitializing"))}, jobFailed, crowsnestv1alpha1.FailureGrype},
		{"grype image pull", finishedJob(batchv1.JobFailed, "BackoffLimitExceeded"), []corev1.Pod{scanPod(waiting("ImagePullBackOff"), waiting("PodInitializing"))}, jobFailed, crowsnestv1alpha1.FailureScannerImagePull},
		{"uploader 3", finishedJob(batchv1.JobFailed, "BackoffLimitExceeded"), []corev1.Pod{scanPod(ok, exited(3, "Error", "bad bom"))}, jobFailed, crowsnestv1alpha1.FailureReportInvalid},
		{"uploader 4", finishedJob(batchv1.JobFailed, "BackoffLimitExceeded"), []corev1.Pod{scanPod(ok, exited(4, "Error", "403"))}, jobFailed, crowsnestv1alpha1.FailureReportRejected},
		{"uploader 5", finishedJob(batchv1.JobFailed, "BackoffLimitExceeded"), []corev1.Pod{scanPod(ok, exited(5, "Error", "refused"))}, jobFailed, crowsnestv1alpha1.FailureAPIUnreachable},
		{"uploader 6", finishedJob(batchv1.JobFailed, "BackoffLimitExceeded"), []corev1.Pod{scanPod(ok, exited(6, "Error", "token"))}, jobFailed, crowsnestv1alpha1.FailureTokenInvalid},
		{"uploader 2", finishedJob(batchv1.JobFailed, "BackoffLimitExceeded"), []corev1.Pod{scanPod(ok, exited(2, "Error", "usage"))}, jobFailed, crowsnestv1alpha1.FailureUploader},
		{"uploader oom", finishedJob(batchv1.JobFailed, "BackoffLimitExceeded"), []corev1.Pod{scanPod(ok, exited(137, "OOMKilled", ""))}, jobFailed, crowsnestv1alpha1.FailureOOMKilled},
		{"pull secret invalid", finishedJob(batchv1.JobFailed, "BackoffLimitExceeded"), []corev1.Pod{{Status: corev1.PodStatus{
			InitContainerStatuses: []corev1.ContainerStatus{{Name: "docker-config", State: exited(1, "Error", "z/.dockercfg: not a dockercfg registry map")}},
		}}}, jobFailed, crowsnestv1alpha1.FailurePullSecretInvalid},
		{"container config", finishedJob(batchv1.JobFailed, "BackoffLimitExceeded"), []corev1.Pod{scanPod(waiting("CreateContainerConfigError"), waiting("PodInitializing"))}, jobFailed, crowsnestv1alpha1.FailureScanPodConfig},
		{"no pod", finishedJob(batchv1.JobFailed, "BackoffLimitExceeded"), nil, jobFailed, crowsnestv1alpha1.FailureJob},
		{"deleted while running", &batchv1.Job{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: ptr.To(metav1.NewTime(t0))}}, nil, jobFailed, crowsnestv1alpha1.FailureJob},
		{"deleted after it finished", deleting(finishedJob(batchv1.JobComplete, "")), nil, jobSucceeded, ""},
	}
	for _, tt := range tests {
		got := jobOutcome(tt.job, tt.pods)
		if got.phase != tt.phase || got.reason != tt.reason {
			t.Errorf("%s: phase %v reason %q, want %v %q", tt.name, got.phase, got.reason, tt.phase, tt.reason)
		}
		if tt.phase != jobActive && !got.finishedAt.Equal(t0) {
			t.Errorf("%s: finishedAt %v", tt.name, got.finishedAt)
		}
	}
}
