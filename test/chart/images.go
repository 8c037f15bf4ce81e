package charttest

import (
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

var digestRE = regexp.MustCompile(`@sha256:[a-f0-9]{64}$`)

// CheckImages returns a problem for every container image that is not
// pinned: it needs a digest, or a tag other than "latest".
func CheckImages(pods []PodTemplate) []string {
	var problems []string
	for _, p := range pods {
		for _, c := range append(append([]corev1.Container{}, p.Spec.InitContainers...), p.Spec.Containers...) {
			if msg := imagePinned(c.Image); msg != "" {
				problems = append(problems, fmt.Sprintf("%s container %s: image %q %s", p.Object, c.Name, c.Image, msg))
			}
		}
	}
	return problems
}

func imagePinned(ref string) string {
	if digestRE.MatchString(ref) {
		return ""
	}
	if strings.Contains(ref, "@") {
		return "has a malformed digest"
	}
	// The tag follows the last ':' after the last '/' (a ':' before it is a registry port).
	name := ref[strings.LastIndex(ref, "/")+1:]
	i := strings.LastIndex(name, ":")
	if i < 0 {
		return "has neither tag nor digest"
	}
	if tag := name[i+1:]; tag == "" || tag == "latest" {
		return "is not pinned (latest or empty tag)"
	}
	return ""
}
