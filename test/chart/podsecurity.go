package charttest

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
)

// PodTemplate is the Pod part of a workload object.
type PodTemplate struct {
	Object string // Kind/name
	Meta   metav1.ObjectMeta
	Spec   corev1.PodSpec
}

// PodTemplates extracts the Pod specs of every workload among objs.
func PodTemplates(objs []*unstructured.Unstructured) ([]PodTemplate, error) {
	var out []PodTemplate
	for _, o := range objs {
		id := o.GetKind() + "/" + o.GetName()
		var tpl *corev1.PodTemplateSpec
		switch o.GetKind() {
		case "Deployment":
			var d appsv1.Deployment
			if err := fromUnstructured(o, &d); err != nil {
				return nil, err
			}
			tpl = &d.Spec.Template
		case "StatefulSet":
			var s appsv1.StatefulSet
			if err := fromUnstructured(o, &s); err != nil {
				return nil, err
			}
			tpl = &s.Spec.Template
		case "DaemonSet":
			var d appsv1.DaemonSet
			if err := fromUnstructured(o, &d); err != nil {
				return nil, err
			}
			tpl = &d.Spec.Template
		case "Job":
			var j batchv1.Job
			if err := fromUnstructured(o, &j); err != nil {
				return nil, err
			}
			tpl = &j.Spec.Template
		case "CronJob":
			var c batchv1.CronJob
			if err := fromUnstructured(o, &c); err != nil {
				return nil, err
			}
			tpl = &c.Spec.JobTemplate.Spec.Template
		case "Pod":
			var p corev1.Pod
			if err := fromUnstructured(o, &p); err != nil {
				return nil, err
			}
			tpl = &corev1.PodTemplateSpec{ObjectMeta: p.ObjectMeta, Spec: p.Spec}
		default:
			continue
		}
		out = append(out, PodTemplate{Object: id, Meta: tpl.ObjectMeta, Spec: tpl.Spec})
	}
	return out, nil
}

func fromUnstructured(o *unstructured.Unstructured, into any) error {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(o.Object, into, true); err != nil {
		return fmt.Errorf("%s/%s: %w", o.GetKind(), o.GetName(), err)
	}
	return nil
}

// CheckRestricted evaluates every Pod template with the Pod Security
// Admission library's own checks at level "restricted", latest version, and
// returns one line per violation.
func CheckRestricted(pods []PodTemplate) ([]string, error) {
	eval, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		return nil, err
	}
	lv := api.LevelVersion{Level: api.LevelRestricted, Version: api.LatestVersion()}
	var problems []string
	for _, p := range pods {
		res := policy.AggregateCheckResults(eval.EvaluatePod(lv, &p.Meta, &p.Spec))
		if !res.Allowed {
			problems = append(problems, fmt.Sprintf("%s violates Pod Security restricted: %s: %s", p.Object, res.ForbiddenReason(), res.ForbiddenDetail()))
		}
	}
	return problems, nil
}
