package scanjob

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestParsePlacement(t *testing.T) {
	sel, err := ParseNodeSelector("crowsnest.dev/node=real, pool=scans")
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"crowsnest.dev/node": "real", "pool": "scans"}; !reflect.DeepEqual(sel, want) {
		t.Errorf("node selector %v, want %v", sel, want)
	}
	tol, err := ParseTolerations("crowsnest.dev/real-node=true:NoSchedule,gpu:NoExecute,dedicated")
	if err != nil {
		t.Fatal(err)
	}
	want := []corev1.Toleration{
		{Key: "crowsnest.dev/real-node", Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule},
		{Key: "gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
		{Key: "dedicated", Operator: corev1.TolerationOpExists},
	}
	if !reflect.DeepEqual(tol, want) {
		t.Errorf("tolerations %+v, want %+v", tol, want)
	}
	for _, bad := range []string{"novalue", "bad key=x", "k=bad value!"} {
		if _, err := ParseNodeSelector(bad); err == nil {
			t.Errorf("node selector %q accepted", bad)
		}
	}
	for _, bad := range []string{"k=v:Sometimes", "bad key:NoSchedule"} {
		if _, err := ParseTolerations(bad); err == nil {
			t.Errorf("toleration %q accepted", bad)
		}
	}
}

func TestBuildPlacementAndInsecureRegistry(t *testing.T) {
	p := params(scanner())
	p.Image = "10.213.0.1:5000/demo/alpine@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	p.Placement = Placement{NodeSelector: map[string]string{"crowsnest.dev/node": "real"},
		Tolerations: []corev1.Toleration{{Key: "crowsnest.dev/real-node", Operator: corev1.TolerationOpExists}}}
	p.InsecureRegistries = []string{"10.213.0.1:5000"}
	spec := Build(p).Spec.Template.Spec
	if spec.NodeSelector["crowsnest.dev/node"] != "real" || len(spec.Tolerations) != 1 {
		t.Errorf("placement not rendered: %v %v", spec.NodeSelector, spec.Tolerations)
	}
	if !hasEnv(spec.InitContainers, "GRYPE_REGISTRY_INSECURE_USE_HTTP") {
		t.Error("an image on an insecure registry: Grype is not told to use plain HTTP")
	}
	p.InsecureRegistries = []string{"other:5000"}
	if hasEnv(Build(p).Spec.Template.Spec.InitContainers, "GRYPE_REGISTRY_INSECURE_USE_HTTP") {
		t.Error("plain HTTP for an image on a registry not listed")
	}
}

func hasEnv(cs []corev1.Container, name string) bool {
	for _, c := range cs {
		for _, e := range c.Env {
			if e.Name == name {
				return true
			}
		}
	}
	return false
}
