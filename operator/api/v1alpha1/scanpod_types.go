package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
)

// ScanPodSpec says where a Scanner's scan Pods are scheduled. Each field
// that is set replaces the operator's default for that field (the
// operator's --scan-pod-* flags, the chart's operator.scanPod values);
// unset fields keep the default. nodeSelector and tolerations count as set
// when present, even empty ({} or []): that removes the default.
//
// Scan Pods are Pods in the Scanner's namespace: the namespace's policies
// (PodTolerationRestriction, quotas on priority classes, admission
// policies) apply to them as to any Pod there.
type ScanPodSpec struct {
	// NodeSelector must match a node's labels for a scan Pod to run there
	// (pod.spec.nodeSelector): at most 32 pairs, label keys and values.
	// +kubebuilder:validation:MaxProperties=32
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.size() <= 317 && k.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && (!k.contains('/') || k.indexOf('/') <= 253))",message="nodeSelector keys must be label keys: an optional DNS-subdomain prefix (at most 253 characters) and '/', then a name of 1-63 characters [A-Za-z0-9-_.] that starts and ends alphanumeric"
	// +optional
	NodeSelector map[string]LabelValue `json:"nodeSelector"`

	// Tolerations let scan Pods run on nodes with matching taints
	// (pod.spec.tolerations): at most 32.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	Tolerations []Toleration `json:"tolerations"`

	// Affinity is the scan Pods' node, Pod and anti-Pod affinity
	// (pod.spec.affinity), validated by the API server when the scan Job is
	// created: an invalid one shows as ReconcileFailed on the Scanner.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`

	// PriorityClassName is the scan Pods' PriorityClass
	// (pod.spec.priorityClassName). It must exist when the Pod is created.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`
}

// LabelValue is a label value: at most 63 characters [A-Za-z0-9-_.] that
// start and end alphanumeric, or empty.
// +kubebuilder:validation:MaxLength=63
// +kubebuilder:validation:Pattern=`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`
type LabelValue string

// Toleration is a core/v1 Toleration, validated at admission: a scan Pod
// with it tolerates the taints it matches.
// +kubebuilder:validation:XValidation:rule="(has(self.key) && size(self.key) > 0) || (has(self.operator) && self.operator == 'Exists')",message="a toleration without a key must have operator Exists (it tolerates every taint)"
// +kubebuilder:validation:XValidation:rule="!has(self.operator) || self.operator != 'Exists' || !has(self.value) || size(self.value) == 0",message="a toleration with operator Exists takes no value"
// +kubebuilder:validation:XValidation:rule="!has(self.tolerationSeconds) || (has(self.effect) && self.effect == 'NoExecute')",message="tolerationSeconds needs effect NoExecute"
type Toleration struct {
	// Key is the taint key it matches; empty with operator Exists matches
	// every taint.
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:Pattern=`^(([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$`
	// +optional
	Key string `json:"key,omitempty"`
	// Operator is Equal (the default: key and value match) or Exists (the
	// key matches, whatever the value).
	// +kubebuilder:validation:Enum=Equal;Exists
	// +optional
	Operator corev1.TolerationOperator `json:"operator,omitempty"`
	// Value is the taint value it matches, with operator Equal.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`
	// +optional
	Value string `json:"value,omitempty"`
	// Effect is the taint effect it matches; empty matches every effect.
	// +kubebuilder:validation:Enum=NoSchedule;PreferNoSchedule;NoExecute
	// +optional
	Effect corev1.TaintEffect `json:"effect,omitempty"`
	// TolerationSeconds bounds how long a scan Pod stays on a node after a
	// NoExecute taint it tolerates appears; unset: forever.
	// +kubebuilder:validation:Minimum=0
	// +optional
	TolerationSeconds *int64 `json:"tolerationSeconds,omitempty"`
}

// CoreTolerations returns the tolerations as core/v1 ones (nil stays nil).
func CoreTolerations(ts []Toleration) []corev1.Toleration {
	if ts == nil {
		return nil
	}
	out := make([]corev1.Toleration, len(ts))
	for i, t := range ts {
		out[i] = corev1.Toleration{Key: t.Key, Operator: t.Operator, Value: t.Value, Effect: t.Effect}
		if t.TolerationSeconds != nil {
			s := *t.TolerationSeconds
			out[i].TolerationSeconds = &s
		}
	}
	return out
}
