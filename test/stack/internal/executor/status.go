package executor

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// mutation changes a Pod's status the way a kubelet would at one step.
type mutation func(p *corev1.Pod, now metav1.Time)

func (e *Executor) setStatus(ctx context.Context, pod *corev1.Pod, m mutation) error {
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		cur, err := e.Client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cur.UID != pod.UID {
			return fmt.Errorf("pod %s/%s was replaced", pod.Namespace, pod.Name)
		}
		m(cur, metav1.Now())
		_, err = e.Client.CoreV1().Pods(cur.Namespace).UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
}

func setCondition(p *corev1.Pod, t corev1.PodConditionType, s corev1.ConditionStatus, reason string, now metav1.Time) {
	for i, c := range p.Status.Conditions {
		if c.Type == t {
			if c.Status != s {
				p.Status.Conditions[i].Status, p.Status.Conditions[i].LastTransitionTime = s, now
			}
			p.Status.Conditions[i].Reason = reason
			return
		}
	}
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: t, Status: s, Reason: reason, LastTransitionTime: now})
}

func waiting(c corev1.Container, reason string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: c.Name, Image: c.Image, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}
}

func terminated(c corev1.Container, r result) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: c.Name, Image: c.Image, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode: r.exitCode, Reason: r.reason, Message: r.message,
		StartedAt: metav1.NewTime(r.started), FinishedAt: metav1.NewTime(r.finished),
	}}}
}

// started: the Pod is accepted; the first init container runs.
func started(pod *corev1.Pod) mutation {
	return func(p *corev1.Pod, now metav1.Time) {
		p.Status.Phase = corev1.PodPending
		p.Status.HostIP, p.Status.PodIP = "127.0.0.1", "127.0.0.1"
		p.Status.StartTime = &now
		setCondition(p, corev1.PodInitialized, corev1.ConditionFalse, "ContainersNotInitialized", now)
		setCondition(p, corev1.PodReady, corev1.ConditionFalse, "ContainersNotReady", now)
		setCondition(p, corev1.ContainersReady, corev1.ConditionFalse, "ContainersNotReady", now)
		p.Status.InitContainerStatuses = nil
		for i, c := range pod.Spec.InitContainers {
			s := waiting(c, "PodInitializing")
			if i == 0 {
				s.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}
				s.Started = ptrTrue()
			}
			p.Status.InitContainerStatuses = append(p.Status.InitContainerStatuses, s)
		}
		p.Status.ContainerStatuses = nil
		for _, c := range pod.Spec.Containers {
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, waiting(c, "PodInitializing"))
		}
	}
}

// failedToStart: a volume could not be set up.
func failedToStart(err error) mutation {
	return func(p *corev1.Pod, now metav1.Time) {
		p.Status.Phase = corev1.PodFailed
		p.Status.Reason, p.Status.Message = "FailedMount", err.Error()
	}
}

// initDone records init container i's end; a failure fails the Pod
// (restartPolicy Never), success starts the next init container.
func initDone(i int, r result) mutation {
	return func(p *corev1.Pod, now metav1.Time) {
		c := p.Spec.InitContainers[i]
		p.Status.InitContainerStatuses[i] = terminated(c, r)
		if r.exitCode != 0 {
			p.Status.Phase = corev1.PodFailed
			return
		}
		if i+1 < len(p.Spec.InitContainers) {
			next := &p.Status.InitContainerStatuses[i+1]
			next.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}
		}
	}
}

// containersRunning: init is done, the main containers run.
func containersRunning() mutation {
	return func(p *corev1.Pod, now metav1.Time) {
		p.Status.Phase = corev1.PodRunning
		setCondition(p, corev1.PodInitialized, corev1.ConditionTrue, "", now)
		setCondition(p, corev1.PodReady, corev1.ConditionTrue, "", now)
		setCondition(p, corev1.ContainersReady, corev1.ConditionTrue, "", now)
		for i := range p.Status.ContainerStatuses {
			s := &p.Status.ContainerStatuses[i]
			s.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}
			s.Ready, s.Started = true, ptrTrue()
		}
	}
}

// containerDone records container i's end; after the last one the Pod
// phase is Succeeded when every container exited 0, Failed otherwise.
func containerDone(i int, r result, last bool) mutation {
	return func(p *corev1.Pod, now metav1.Time) {
		p.Status.ContainerStatuses[i] = terminated(p.Spec.Containers[i], r)
		if !last {
			return
		}
		p.Status.Phase = corev1.PodSucceeded
		for _, s := range p.Status.ContainerStatuses {
			if t := s.State.Terminated; t == nil || t.ExitCode != 0 {
				p.Status.Phase = corev1.PodFailed
			}
		}
		setCondition(p, corev1.PodReady, corev1.ConditionFalse, "PodCompleted", now)
		setCondition(p, corev1.ContainersReady, corev1.ConditionFalse, "PodCompleted", now)
	}
}

func ptrTrue() *bool { t := true; return &t }
