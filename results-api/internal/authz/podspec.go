package authz

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// templateMismatch says how pod does not run what its Job's Pod template
// says, or "" when it does: the same init and main containers, in order,
// each with the template's image, command and args, and no ephemeral
// containers (a Job's template cannot have any).
//
// A container's image is mutable on a running Pod: whoever may patch Pods
// in the namespace (the edit role) could swap the uploader for an image of
// their own that uploads anything with the Pod-bound token. The chart's
// admission policy refuses that change; this check is what holds where it
// is not installed, and it fetches the Pod on every upload, so a Pod
// changed after an earlier upload is refused too.
//
// The one difference allowed is an image the template names by tag that
// the Pod runs pinned by a digest of it ("repo:tag@sha256:…"): what a
// digest-pinning admission webhook writes into Pods.
func templateMismatch(pod *corev1.Pod, tmpl *corev1.PodSpec) string {
	if n := len(pod.Spec.EphemeralContainers); n > 0 {
		return fmt.Sprintf("it has %d ephemeral container(s) (%s)", n, pod.Spec.EphemeralContainers[0].Name)
	}
	if why := containersMismatch("init container", pod.Spec.InitContainers, tmpl.InitContainers); why != "" {
		return why
	}
	return containersMismatch("container", pod.Spec.Containers, tmpl.Containers)
}

func containersMismatch(kind string, got, want []corev1.Container) string {
	if len(got) != len(want) {
		return fmt.Sprintf("it has %d %ss, the template %d", len(got), kind, len(want))
	}
	for i, g := range got {
		w := want[i]
		switch {
		case g.Name != w.Name:
			return fmt.Sprintf("its %s %d is %q, the template's %q", kind, i, clip(g.Name), clip(w.Name))
		case !sameImage(g.Image, w.Image):
			return fmt.Sprintf("its %s %q runs image %q, the template's %q", kind, g.Name, clip(g.Image), clip(w.Image))
		case !slices.Equal(g.Command, w.Command):
			return fmt.Sprintf("its %s %q runs another command than the template's", kind, g.Name)
		case !slices.Equal(g.Args, w.Args):
			return fmt.Sprintf("its %s %q has other args than the template's", kind, g.Name)
		}
	}
	return ""
}

// sameImage: the template's image, or that image pinned by a digest when
// the template names none.
func sameImage(pod, tmpl string) bool {
	if pod == tmpl {
		return true
	}
	digest, ok := strings.CutPrefix(pod, tmpl+"@sha256:")
	return ok && !strings.Contains(tmpl, "@") && len(digest) == 64 && strings.Trim(digest, "0123456789abcdef") == ""
}

// clip bounds a string from the Pod spec in an error message.
func clip(s string) string {
	const limit = 256
	if len(s) <= limit {
		return s
	}
	return s[:limit] + "…"
}
