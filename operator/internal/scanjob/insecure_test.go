package scanjob

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestInsecureRegistry(t *testing.T) {
	p := params(scanner())
	p.Image = "10.213.0.1:5000/demo/alpine@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	p.InsecureRegistries = []string{"10.213.0.1:5000"}
	if !hasEnv(Build(p).Spec.Template.Spec.InitContainers, "GRYPE_REGISTRY_INSECURE_USE_HTTP") {
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
