package scanjob

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"

	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
)

// TestSchedulingOverride: each field a Scanner sets replaces the operator's
// default for that field, an empty nodeSelector or tolerations list set on
// the Scanner removes the default, and unset fields keep it.
func TestSchedulingOverride(t *testing.T) {
	gpu := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "gpu", Operator: corev1.NodeSelectorOpDoesNotExist}}}},
	}}}
	taint := corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "scan", Effect: corev1.TaintEffectNoSchedule}
	def := Scheduling{NodeSelector: map[string]string{"pool": "scans"}, Tolerations: []corev1.Toleration{taint}, Affinity: gpu, PriorityClassName: "low"}
	for _, tt := range []struct {
		name string
		def  Scheduling
		spec *crowsnestv1alpha1.ScanPodSpec
		want Scheduling
	}{
		{"no defaults, no scanPod", Scheduling{}, nil, Scheduling{}},
		{"defaults only", def, nil, def},
		{"empty scanPod keeps every default", def, &crowsnestv1alpha1.ScanPodSpec{}, def},
		{"nodeSelector replaces, not merges", def,
			&crowsnestv1alpha1.ScanPodSpec{NodeSelector: map[string]crowsnestv1alpha1.LabelValue{"disk": "ssd"}},
			Scheduling{NodeSelector: map[string]string{"disk": "ssd"}, Tolerations: def.Tolerations, Affinity: gpu, PriorityClassName: "low"}},
		{"empty nodeSelector and tolerations remove the defaults", def,
			&crowsnestv1alpha1.ScanPodSpec{NodeSelector: map[string]crowsnestv1alpha1.LabelValue{}, Tolerations: []crowsnestv1alpha1.Toleration{}},
			Scheduling{NodeSelector: map[string]string{}, Tolerations: []corev1.Toleration{}, Affinity: gpu, PriorityClassName: "low"}},
		{"every field replaced", def, &crowsnestv1alpha1.ScanPodSpec{
			NodeSelector:      map[string]crowsnestv1alpha1.LabelValue{"a": "b"},
			Tolerations:       []crowsnestv1alpha1.Toleration{{Operator: corev1.TolerationOpExists}},
			Affinity:          &corev1.Affinity{},
			PriorityClassName: "high",
		}, Scheduling{NodeSelector: map[string]string{"a": "b"}, Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Affinity: &corev1.Affinity{}, PriorityClassName: "high"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.def.Override(tt.spec)
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
	// The defaults are copied, never shared with a Job.
	got := def.Override(nil)
	got.NodeSelector["pool"] = "changed"
	got.Tolerations[0].Value = "changed"
	got.Affinity.NodeAffinity = nil
	if def.NodeSelector["pool"] != "scans" || def.Tolerations[0].Value != "scan" || def.Affinity.NodeAffinity == nil {
		t.Error("changing a Job's scheduling changed the operator's defaults")
	}
}

// TestBuildSchedulingUnsetByDefault: with no defaults and no scanPod, the
// Pod template has no scheduling fields (Jobs render as before scanPod).
func TestBuildSchedulingUnsetByDefault(t *testing.T) {
	spec := Build(params(scanner())).Spec.Template.Spec
	if spec.NodeSelector != nil || spec.Tolerations != nil || spec.Affinity != nil || spec.PriorityClassName != "" {
		t.Errorf("scheduling set without being asked for: %v %v %v %q", spec.NodeSelector, spec.Tolerations, spec.Affinity, spec.PriorityClassName)
	}
}
