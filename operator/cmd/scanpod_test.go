package main

import (
	"flag"
	"io"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/crowsnest-dev/crowsnest/operator/internal/scanjob"
)

// parseScanPod parses the --scan-pod-* flags from env and args.
func parseScanPod(env map[string]string, args ...string) (Options, error) {
	var o Options
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.BindFlags(fs)
	if err := applyEnv(fs, func(k string) string { return env[k] }); err != nil {
		return o, err
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	return o, validateScanPod(o.ScanPod)
}

// TestScanPodFlags: the syntax the local stack and the chart pass, the
// JSON forms, environment defaults, and that the result reaches the
// Scanner controller's options.
func TestScanPodFlags(t *testing.T) {
	realNode := corev1.Toleration{Key: "crowsnest.dev/real-node", Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule}
	for _, tt := range []struct {
		name string
		env  map[string]string
		args []string
		want scanjob.Scheduling
	}{
		{name: "none", want: scanjob.Scheduling{}},
		{name: "the local stack's flags", args: []string{
			"--scan-pod-node-selector=crowsnest.dev/node=real", "--scan-pod-tolerations=crowsnest.dev/real-node=true:NoSchedule",
		}, want: scanjob.Scheduling{NodeSelector: map[string]string{"crowsnest.dev/node": "real"}, Tolerations: []corev1.Toleration{realNode}}},
		{name: "lists, Exists and no effect", args: []string{
			"--scan-pod-node-selector=a=1, b=", "--scan-pod-tolerations=gpu:NoExecute,dedicated",
			"--scan-pod-priority-class=crowsnest-scan",
		}, want: scanjob.Scheduling{NodeSelector: map[string]string{"a": "1", "b": ""}, PriorityClassName: "crowsnest-scan",
			Tolerations: []corev1.Toleration{
				{Key: "gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
				{Key: "dedicated", Operator: corev1.TolerationOpExists},
			}}},
		{name: "JSON, as the chart renders it", args: []string{
			`--scan-pod-tolerations=[{"key":"crowsnest.dev/real-node","operator":"Equal","value":"true","effect":"NoSchedule"},{"operator":"Exists","effect":"NoExecute","tolerationSeconds":60}]`,
			`--scan-pod-affinity={"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"gpu","operator":"DoesNotExist"}]}]}}}`,
		}, want: scanjob.Scheduling{
			Tolerations: []corev1.Toleration{realNode, {Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](60)}},
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "gpu", Operator: corev1.NodeSelectorOpDoesNotExist}}}},
			}}},
		}},
		{name: "environment defaults, a flag wins", env: map[string]string{
			"CROWSNEST_SCAN_POD_NODE_SELECTOR": "pool=scans", "CROWSNEST_SCAN_POD_TOLERATIONS": "crowsnest.dev/real-node=true:NoSchedule",
			"CROWSNEST_SCAN_POD_PRIORITY_CLASS": "low",
		}, args: []string{"--scan-pod-node-selector=pool=other"},
			want: scanjob.Scheduling{NodeSelector: map[string]string{"pool": "other"}, Tolerations: []corev1.Toleration{realNode}, PriorityClassName: "low"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parseScanPod(tt.env, tt.args...)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(o.ScanPod, tt.want) || !reflect.DeepEqual(o.controllerOptions().ScanPod, tt.want) {
				t.Errorf("got %+v, want %+v", o.ScanPod, tt.want)
			}
		})
	}
}

func TestScanPodFlagsAreValidated(t *testing.T) {
	for _, tt := range []struct{ arg, want string }{
		{"--scan-pod-node-selector=novalue", "want key=value"},
		{"--scan-pod-node-selector=bad key=x", `key "bad key"`},
		{"--scan-pod-node-selector=k=" + strings.Repeat("v", 64), "value"},
		{"--scan-pod-tolerations==x:NoSchedule", "want key[=value][:Effect]"},
		{"--scan-pod-tolerations=k=v:Sometimes", `effect "Sometimes"`},
		{`--scan-pod-tolerations=[{"key":"k","operator":"Exists","value":"v"}]`, "operator Exists takes no value"},
		{`--scan-pod-tolerations=[{"operator":"Equal","value":"v"}]`, "without a key must have operator Exists"},
		{`--scan-pod-tolerations=[{"key":"k","tolerationSeconds":5}]`, "tolerationSeconds needs effect NoExecute"},
		{`--scan-pod-tolerations=[{"key":"k","bogus":1}]`, "unknown field"},
		{`--scan-pod-affinity={"nodeAfinity":{}}`, "unknown field"},
		{"--scan-pod-priority-class=Not_Valid", "--scan-pod-priority-class"},
	} {
		if _, err := parseScanPod(nil, tt.arg); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want one mentioning %q", tt.arg, err, tt.want)
		}
	}
}
