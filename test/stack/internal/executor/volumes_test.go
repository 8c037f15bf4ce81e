package executor

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestRewriteMapsMountPathsOnly(t *testing.T) {
	c := corev1.Container{VolumeMounts: []corev1.VolumeMount{
		{Name: "scan", MountPath: "/scan"},
		{Name: "tmp", MountPath: "/tmp"},
		{Name: "token", MountPath: "/var/run/secrets/crowsnest/token"},
	}}
	m, err := containerMounts(c, map[string]string{"scan": "/h/scan", "tmp": "/h/tmp", "token": "/h/token"})
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		"cyclonedx-json=/scan/bom.json": "cyclonedx-json=/h/scan/bom.json",
		"--bom-file=/scan/bom.json":     "--bom-file=/h/scan/bom.json",
		"/tmp":                          "/h/tmp",
		"/tmp/.cache":                   "/h/tmp/.cache",
		"--token-file=/var/run/secrets/crowsnest/token/token": "--token-file=/h/token/token",
		"registry:127.0.0.1:5000/demo/scanner@sha256:ab":      "registry:127.0.0.1:5000/demo/scanner@sha256:ab",
		"/scanner/x": "/scanner/x", // a prefix that is not a path boundary
		"--output":   "--output",
	} {
		if got := m.rewrite(in); got != want {
			t.Errorf("rewrite(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestContainerMountsRejectsUnknownVolume(t *testing.T) {
	c := corev1.Container{Name: "x", VolumeMounts: []corev1.VolumeMount{{Name: "nope", MountPath: "/x"}}}
	if _, err := containerMounts(c, map[string]string{}); err == nil {
		t.Fatal("want an error for a mount of an unknown volume")
	}
}
