package discovery

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestTransformPodKeepsOnlyWhatIsRead(t *testing.T) {
	in := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "p", Namespace: "ns", Labels: map[string]string{"a": "b"},
			Annotations:   map[string]string{"big": strings.Repeat("x", 10000)},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
		},
		Spec: corev1.PodSpec{
			Containers:       []corev1.Container{{Name: "app", Image: "nginx", Command: []string{"nginx"}, Env: []corev1.EnvVar{{Name: "SECRET", Value: "s"}}}},
			ImagePullSecrets: []corev1.LocalObjectReference{{Name: "regcred"}},
			Volumes:          []corev1.Volume{{Name: "v"}},
		},
		Status: corev1.PodStatus{
			Phase:      corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady}},
			PodIP:      "10.0.0.1",
			ContainerStatuses: []corev1.ContainerStatus{{
				Name: "app", ImageID: "nginx@sha256:" + strings.Repeat("a", 64), RestartCount: 3,
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", Message: strings.Repeat("m", 5000) + "END"}},
			}},
		},
	}
	outObj, err := TransformPod(in)
	if err != nil {
		t.Fatal(err)
	}
	out := outObj.(*corev1.Pod)
	if out.Annotations != nil || out.ManagedFields != nil || out.Spec.Volumes != nil || out.Status.Conditions != nil || out.Status.PodIP != "" {
		t.Errorf("transform kept dropped fields: %+v", out)
	}
	if c := out.Spec.Containers[0]; c.Name != "app" || c.Image != "nginx" || c.Env != nil || c.Command != nil {
		t.Errorf("container = %+v", c)
	}
	if out.Labels["a"] != "b" || out.Spec.ImagePullSecrets[0].Name != "regcred" || out.Status.Phase != corev1.PodRunning {
		t.Errorf("transform lost kept fields: %+v", out)
	}
	cs := out.Status.ContainerStatuses[0]
	if cs.ImageID != in.Status.ContainerStatuses[0].ImageID || cs.RestartCount != 0 || cs.State.Terminated.ExitCode != 1 {
		t.Errorf("status = %+v", cs)
	}
	if m := cs.State.Terminated.Message; len(m) != maxMessage || !strings.HasSuffix(m, "END") {
		t.Errorf("message not truncated to its tail: len %d", len(m))
	}
	if other, _ := TransformPod("tombstone"); other != "tombstone" {
		t.Errorf("non-Pod changed: %v", other)
	}
}
