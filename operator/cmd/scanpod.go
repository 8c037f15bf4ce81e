package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/crowsnest-dev/crowsnest/operator/internal/scanjob"
)

// The operator-wide scheduling of scan Pods (--scan-pod-*): each is the
// default that a Scanner's spec.scanPod field of the same name replaces.

// bindScanPodFlags registers the --scan-pod-* flags on fs.
func (o *Options) bindScanPodFlags(fs *flag.FlagSet) {
	fs.Var((*nodeSelectorFlag)(&o.ScanPod.NodeSelector), "scan-pod-node-selector",
		"node selector of scan Pods, `key=value[,key=value…]`, e.g. crowsnest.dev/node=real (a Scanner's spec.scanPod.nodeSelector replaces it)")
	fs.Var((*tolerationsFlag)(&o.ScanPod.Tolerations), "scan-pod-tolerations",
		"tolerations of scan Pods: a JSON array of core/v1 Tolerations, or `key[=value][:Effect][,…]` (=value: operator Equal, none: Exists; no effect: every effect), e.g. crowsnest.dev/real-node=true:NoSchedule (a Scanner's spec.scanPod.tolerations replaces it)")
	fs.Var(&affinityFlag{&o.ScanPod.Affinity}, "scan-pod-affinity",
		"affinity of scan Pods, a core/v1 Affinity as JSON (a Scanner's spec.scanPod.affinity replaces it)")
	fs.StringVar(&o.ScanPod.PriorityClassName, "scan-pod-priority-class", "",
		"PriorityClass of scan Pods (a Scanner's spec.scanPod.priorityClassName replaces it; empty: none)")
}

// validateScanPod checks the priority class name (the other flags are
// checked as they are parsed).
func validateScanPod(s scanjob.Scheduling) error {
	if n := s.PriorityClassName; n != "" {
		if msgs := validation.IsDNS1123Subdomain(n); len(msgs) > 0 {
			return fmt.Errorf("--scan-pod-priority-class %q: %s", n, strings.Join(msgs, "; "))
		}
	}
	return nil
}

// nodeSelectorFlag is key=value pairs separated by commas; Set replaces the
// whole selector, so a flag overrides its environment default.
type nodeSelectorFlag map[string]string

func (f *nodeSelectorFlag) String() string {
	if f == nil || len(*f) == 0 {
		return ""
	}
	pairs := make([]string, 0, len(*f))
	for k, v := range *f {
		pairs = append(pairs, k+"="+v)
	}
	sort.Strings(pairs)
	return strings.Join(pairs, ",")
}

func (f *nodeSelectorFlag) Set(v string) error {
	out := map[string]string{}
	for _, pair := range strings.Split(v, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		k, val, ok := strings.Cut(pair, "=")
		if !ok {
			return fmt.Errorf("%q: want key=value", pair)
		}
		if err := labelPair(k, val); err != nil {
			return err
		}
		out[k] = val
	}
	*f = out
	return nil
}

// tolerationsFlag is a JSON array of Tolerations, or key[=value][:Effect]
// items separated by commas (kubectl taint's syntax).
type tolerationsFlag []corev1.Toleration

func (f *tolerationsFlag) String() string {
	if f == nil || len(*f) == 0 {
		return ""
	}
	b, _ := json.Marshal(*f)
	return string(b)
}

func (f *tolerationsFlag) Set(v string) error {
	v = strings.TrimSpace(v)
	var out []corev1.Toleration
	if strings.HasPrefix(v, "[") {
		if err := yaml.UnmarshalStrict([]byte(v), &out); err != nil {
			return fmt.Errorf("tolerations JSON: %w", err)
		}
	} else {
		for _, item := range strings.Split(v, ",") {
			if item = strings.TrimSpace(item); item == "" {
				continue
			}
			t, err := parseToleration(item)
			if err != nil {
				return err
			}
			out = append(out, t)
		}
	}
	for i, t := range out {
		if err := validToleration(t); err != nil {
			return fmt.Errorf("toleration %d: %w", i+1, err)
		}
	}
	*f = out
	return nil
}

// parseToleration reads key[=value][:Effect].
func parseToleration(item string) (corev1.Toleration, error) {
	rest, effect, hasEffect := strings.Cut(item, ":")
	key, value, hasValue := strings.Cut(rest, "=")
	t := corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists}
	if hasValue {
		t.Operator, t.Value = corev1.TolerationOpEqual, value
	}
	if hasEffect {
		t.Effect = corev1.TaintEffect(effect)
	}
	if key == "" {
		return t, fmt.Errorf("%q: want key[=value][:Effect], e.g. dedicated=scan:NoSchedule", item)
	}
	return t, nil
}

// validToleration holds a toleration to the API server's rules.
func validToleration(t corev1.Toleration) error {
	if t.Key != "" {
		if msgs := validation.IsQualifiedName(t.Key); len(msgs) > 0 {
			return fmt.Errorf("key %q: %s", t.Key, strings.Join(msgs, "; "))
		}
	}
	switch t.Operator {
	case corev1.TolerationOpEqual, "":
		if t.Key == "" {
			return errors.New("a toleration without a key must have operator Exists")
		}
		if msgs := validation.IsValidLabelValue(t.Value); len(msgs) > 0 {
			return fmt.Errorf("value %q: %s", t.Value, strings.Join(msgs, "; "))
		}
	case corev1.TolerationOpExists:
		if t.Value != "" {
			return fmt.Errorf("key %q: operator Exists takes no value", t.Key)
		}
	default:
		return fmt.Errorf("operator %q: want Equal or Exists", t.Operator)
	}
	switch t.Effect {
	case "", corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
	default:
		return fmt.Errorf("effect %q: want NoSchedule, PreferNoSchedule or NoExecute", t.Effect)
	}
	if t.TolerationSeconds != nil && t.Effect != corev1.TaintEffectNoExecute {
		return errors.New("tolerationSeconds needs effect NoExecute")
	}
	return nil
}

// affinityFlag is a core/v1 Affinity as JSON; empty is none.
type affinityFlag struct{ a **corev1.Affinity }

func (f *affinityFlag) String() string {
	if f == nil || f.a == nil || *f.a == nil {
		return ""
	}
	b, _ := json.Marshal(*f.a)
	return string(b)
}

func (f *affinityFlag) Set(v string) error {
	v = strings.TrimSpace(v)
	if v == "" || v == "{}" || v == "null" {
		*f.a = nil
		return nil
	}
	var a corev1.Affinity
	if err := yaml.UnmarshalStrict(bytes.TrimSpace([]byte(v)), &a); err != nil {
		return fmt.Errorf("affinity JSON: %w", err)
	}
	*f.a = &a
	return nil
}

// labelPair checks a label key and value.
func labelPair(k, v string) error {
	if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
		return fmt.Errorf("key %q: %s", k, strings.Join(msgs, "; "))
	}
	if msgs := validation.IsValidLabelValue(v); len(msgs) > 0 {
		return fmt.Errorf("value %q of %s: %s", v, k, strings.Join(msgs, "; "))
	}
	return nil
}
