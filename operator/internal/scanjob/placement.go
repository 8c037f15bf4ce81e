package scanjob

import (
	"fmt"
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Placement is where scan Pods may run: the operator's defaults for every
// scan Job (--scan-pod-node-selector, --scan-pod-tolerations), e.g. to keep
// scans off GPU or tainted nodes, or on nodes set aside for them.
type Placement struct {
	NodeSelector map[string]string
	Tolerations  []corev1.Toleration
}

// ParseNodeSelector parses "k=v,k2=v2" (empty: none).
func ParseNodeSelector(s string) (map[string]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return nil, fmt.Errorf("node selector %q: want key=value", kv)
		}
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return nil, fmt.Errorf("node selector key %q: %s", k, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return nil, fmt.Errorf("node selector value %q: %s", v, strings.Join(errs, "; "))
		}
		out[k] = v
	}
	return out, nil
}

// ParseTolerations parses "key=value:Effect,key:Effect,key" (Equal with a
// value, Exists without; no effect: every effect).
func ParseTolerations(s string) ([]corev1.Toleration, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []corev1.Toleration
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		kv, effect, _ := strings.Cut(item, ":")
		t := corev1.Toleration{Effect: corev1.TaintEffect(effect)}
		switch t.Effect {
		case "", corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		default:
			return nil, fmt.Errorf("toleration %q: effect %q is not NoSchedule, PreferNoSchedule or NoExecute", item, effect)
		}
		if k, v, ok := strings.Cut(kv, "="); ok {
			t.Key, t.Value, t.Operator = k, v, corev1.TolerationOpEqual
		} else {
			t.Key, t.Operator = kv, corev1.TolerationOpExists
		}
		if errs := validation.IsQualifiedName(t.Key); len(errs) > 0 {
			return nil, fmt.Errorf("toleration key %q: %s", t.Key, strings.Join(errs, "; "))
		}
		out = append(out, t)
	}
	return out, nil
}

// insecure tells whether image's registry host is one Grype may reach over
// plain HTTP (--insecure-registries: a local development registry).
func insecure(image string, registries []string) bool {
	host, _, ok := strings.Cut(image, "/")
	if !ok || len(registries) == 0 {
		return false
	}
	for _, r := range registries {
		if r == host {
			return true
		}
	}
	return false
}

// copyLabels copies a selector so the Job never shares the operator's map
// (nil when empty: the field is then left out).
func copyLabels(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return maps.Clone(m)
}
