package discovery

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// maxMessage bounds container state messages kept in the cache; scan Pods
// put Grype's last log lines there (FallbackToLogsOnError).
const maxMessage = 1024

// TransformPod is a cache transform that keeps only what the operator reads
// from a Pod: identity, labels, owner references, container names and images,
// imagePullSecrets, phase, and per container its imageID and terminal or
// waiting state. Everything else (managedFields, annotations, volumes, most of
// spec and status) is dropped before the object is stored, which is what
// keeps the operator's memory flat with tens of thousands of Pods.
func TransformPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil // tombstones and other kinds pass through unchanged
	}
	slim := &corev1.Pod{
		TypeMeta: pod.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name:              pod.Name,
			Namespace:         pod.Namespace,
			UID:               pod.UID,
			ResourceVersion:   pod.ResourceVersion,
			Generation:        pod.Generation,
			CreationTimestamp: pod.CreationTimestamp,
			DeletionTimestamp: pod.DeletionTimestamp,
			Labels:            pod.Labels,
			OwnerReferences:   pod.OwnerReferences,
		},
		Spec: corev1.PodSpec{
			Containers:          slimContainers(pod.Spec.Containers),
			InitContainers:      slimContainers(pod.Spec.InitContainers),
			ImagePullSecrets:    pod.Spec.ImagePullSecrets,
			EphemeralContainers: slimEphemeral(pod.Spec.EphemeralContainers),
		},
		Status: corev1.PodStatus{
			Phase:                      pod.Status.Phase,
			ContainerStatuses:          slimStatuses(pod.Status.ContainerStatuses),
			InitContainerStatuses:      slimStatuses(pod.Status.InitContainerStatuses),
			EphemeralContainerStatuses: slimStatuses(pod.Status.EphemeralContainerStatuses),
		},
	}
	return slim, nil
}

func slimContainers(cs []corev1.Container) []corev1.Container {
	if len(cs) == 0 {
		return nil
	}
	out := make([]corev1.Container, len(cs))
	for i, c := range cs {
		out[i] = corev1.Container{Name: c.Name, Image: c.Image}
	}
	return out
}

func slimEphemeral(cs []corev1.EphemeralContainer) []corev1.EphemeralContainer {
	if len(cs) == 0 {
		return nil
	}
	out := make([]corev1.EphemeralContainer, len(cs))
	for i, c := range cs {
		out[i].Name, out[i].Image = c.Name, c.Image
	}
	return out
}

func slimStatuses(ss []corev1.ContainerStatus) []corev1.ContainerStatus {
	if len(ss) == 0 {
		return nil
	}
	out := make([]corev1.ContainerStatus, len(ss))
	for i, s := range ss {
		out[i] = corev1.ContainerStatus{Name: s.Name, Image: s.Image, ImageID: s.ImageID, State: slimState(s.State)}
	}
	return out
}

func slimState(st corev1.ContainerState) corev1.ContainerState {
	var out corev1.ContainerState
	if w := st.Waiting; w != nil {
		out.Waiting = &corev1.ContainerStateWaiting{Reason: w.Reason, Message: truncate(w.Message)}
	}
	if r := st.Running; r != nil {
		out.Running = &corev1.ContainerStateRunning{StartedAt: r.StartedAt}
	}
	if t := st.Terminated; t != nil {
		out.Terminated = &corev1.ContainerStateTerminated{
			ExitCode: t.ExitCode, Reason: t.Reason, Message: truncate(t.Message),
			StartedAt: t.StartedAt, FinishedAt: t.FinishedAt,
		}
	}
	return out
}

func truncate(s string) string {
	if len(s) <= maxMessage {
		return s
	}
	return s[len(s)-maxMessage:] // the end of a log holds the error
}
