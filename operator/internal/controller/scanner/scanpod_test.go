package scanner

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
	"github.com/crowsnest-dev/crowsnest/operator/internal/scanjob"
	"github.com/crowsnest-dev/crowsnest/test/support/resultsapitest"
)

// TestScanPodSchedulingReachesTheJob: a Scanner's spec.scanPod, stored
// through the API server (CRD schema and all), reaches its scan Jobs' Pod
// template: its nodeSelector and tolerations replace the operator's
// defaults, and the default it leaves unset (the priority class) stays.
func TestScanPodSchedulingReachesTheJob(t *testing.T) {
	ns := newNamespace(t)
	api := resultsapitest.Start(t)
	runPod(t, ns, "web", nil, "registry.example/web@"+testDigest(41))
	newScanner(t, ns, func(s *crowsnestv1alpha1.ScannerSpec) {
		s.ScanPod = &crowsnestv1alpha1.ScanPodSpec{
			NodeSelector: map[string]crowsnestv1alpha1.LabelValue{"crowsnest.dev/node": "real"},
			Tolerations: []crowsnestv1alpha1.Toleration{
				{Key: "crowsnest.dev/real-node", Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule},
			},
		}
	})
	opts := testOptions()
	opts.ScanPod = scanjob.Scheduling{
		NodeSelector:      map[string]string{"pool": "default"},
		Tolerations:       []corev1.Toleration{{Key: "other", Operator: corev1.TolerationOpExists}},
		PriorityClassName: "crowsnest-scan",
	}
	startOperator(t, ns, api.URL, "", opts)

	eventually(t, 15*time.Second, "a scan Job", jobCount(t, ns, 1))
	spec := scanJobs(t, ns)[0].Spec.Template.Spec
	if want := map[string]string{"crowsnest.dev/node": "real"}; !reflect.DeepEqual(spec.NodeSelector, want) {
		t.Errorf("nodeSelector %v, want %v (the Scanner's, not merged with the default)", spec.NodeSelector, want)
	}
	want := []corev1.Toleration{{Key: "crowsnest.dev/real-node", Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule}}
	if !reflect.DeepEqual(spec.Tolerations, want) {
		t.Errorf("tolerations %v, want %v", spec.Tolerations, want)
	}
	if spec.PriorityClassName != "crowsnest-scan" || spec.Affinity != nil {
		t.Errorf("priorityClassName %q affinity %v, want the default class and no affinity", spec.PriorityClassName, spec.Affinity)
	}
}

// TestScanPodIsValidatedAtAdmission: the CRD schema refuses scanPod values
// a Pod could not take, so no Scanner stalls on a Job the API server
// refuses.
func TestScanPodIsValidatedAtAdmission(t *testing.T) {
	ns := newNamespace(t)
	n := 0
	for name, tt := range map[string]struct {
		spec map[string]any
		want string
	}{
		"node selector key":         {map[string]any{"nodeSelector": map[string]any{"bad key": "x"}}, "nodeSelector keys must be label keys"},
		"node selector value":       {map[string]any{"nodeSelector": map[string]any{"k": "-x"}}, "nodeSelector"},
		"toleration operator":       {map[string]any{"tolerations": []any{map[string]any{"key": "k", "operator": "Sometimes"}}}, "operator"},
		"toleration effect":         {map[string]any{"tolerations": []any{map[string]any{"key": "k", "effect": "NoRun"}}}, "effect"},
		"exists with a value":       {map[string]any{"tolerations": []any{map[string]any{"key": "k", "operator": "Exists", "value": "v"}}}, "operator Exists takes no value"},
		"no key, not exists":        {map[string]any{"tolerations": []any{map[string]any{"value": "v"}}}, "without a key must have operator Exists"},
		"seconds without NoExecute": {map[string]any{"tolerations": []any{map[string]any{"key": "k", "tolerationSeconds": 5}}}, "tolerationSeconds needs effect NoExecute"},
		"priority class":            {map[string]any{"priorityClassName": "Not_Valid"}, "priorityClassName"},
	} {
		n++
		err := k8s.Create(t.Context(), rawScanner(ns, fmt.Sprintf("s-%d", n), map[string]any{"scanPod": tt.spec}))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want a refusal mentioning %q", name, err, tt.want)
		}
	}
	ok := rawScanner(ns, "valid", map[string]any{"scanPod": map[string]any{
		"nodeSelector":      map[string]any{"crowsnest.dev/node": "real", "empty": ""},
		"tolerations":       []any{map[string]any{"operator": "Exists"}, map[string]any{"key": "k", "effect": "NoExecute", "tolerationSeconds": 30}},
		"affinity":          map[string]any{"nodeAffinity": map[string]any{}},
		"priorityClassName": "crowsnest-scan",
	}})
	if err := k8s.Create(t.Context(), ok); err != nil {
		t.Fatalf("a valid scanPod was refused: %v", err)
	}
}
