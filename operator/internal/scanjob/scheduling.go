package scanjob

import (
	"maps"

	corev1 "k8s.io/api/core/v1"

	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
)

// Scheduling is where scan Pods run: the operator-wide defaults
// (--scan-pod-* flags), each of which a Scanner's spec.scanPod may replace.
type Scheduling struct {
	NodeSelector      map[string]string
	Tolerations       []corev1.Toleration
	Affinity          *corev1.Affinity
	PriorityClassName string
}

// Override returns the scheduling of a Scanner's scan Pods: each field set
// in spec (nil is unset; nodeSelector and tolerations set to empty remove
// the default) replaces the default's, the others are the default's. It is
// pure and returns copies, never the default's own maps and slices.
func (s Scheduling) Override(spec *crowsnestv1alpha1.ScanPodSpec) Scheduling {
	out := Scheduling{
		NodeSelector: maps.Clone(s.NodeSelector), Affinity: s.Affinity.DeepCopy(), PriorityClassName: s.PriorityClassName,
	}
	for _, t := range s.Tolerations {
		out.Tolerations = append(out.Tolerations, *t.DeepCopy())
	}
	if spec == nil {
		return out
	}
	if spec.NodeSelector != nil {
		out.NodeSelector = make(map[string]string, len(spec.NodeSelector))
		for k, v := range spec.NodeSelector {
			out.NodeSelector[k] = string(v)
		}
	}
	if spec.Tolerations != nil {
		out.Tolerations = crowsnestv1alpha1.CoreTolerations(spec.Tolerations)
	}
	if spec.Affinity != nil {
		out.Affinity = spec.Affinity.DeepCopy()
	}
	if spec.PriorityClassName != "" {
		out.PriorityClassName = spec.PriorityClassName
	}
	return out
}

// apply sets the scheduling fields of a scan Pod's spec; empty ones stay
// unset, so a Job without any scheduling renders as before.
func (s Scheduling) apply(pod *corev1.PodSpec) {
	if len(s.NodeSelector) > 0 {
		pod.NodeSelector = s.NodeSelector
	}
	if len(s.Tolerations) > 0 {
		pod.Tolerations = s.Tolerations
	}
	pod.Affinity = s.Affinity
	pod.PriorityClassName = s.PriorityClassName
}
