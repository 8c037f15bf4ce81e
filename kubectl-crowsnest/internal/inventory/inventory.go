package inventory

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crowsnest-dev/crowsnest/kubectl-crowsnest/internal/resultsapi"
)

// Digest returns the sha256 manifest digest of a container status's
// imageID ("docker-pullable://repo@sha256:…", "repo@sha256:…" or a bare
// "sha256:…"), and false when there is none (the container has not
// started, or the imageID is not a sha256 digest).
func Digest(imageID string) (string, bool) {
	s := strings.TrimSpace(imageID)
	if i := strings.Index(s, "://"); i >= 0 {
		s = s[i+3:]
	}
	if i := strings.LastIndex(s, "@"); i >= 0 {
		s = s[i+1:]
	}
	return s, ValidDigest(s) == nil
}

// ValidDigest checks the sha256:<64 lowercase hex> form results-api keys
// reports by.
func ValidDigest(d string) error {
	hex, ok := strings.CutPrefix(d, "sha256:")
	if !ok || len(hex) != 64 || strings.Trim(hex, "0123456789abcdef") != "" {
		return fmt.Errorf("%q is not an image digest (sha256: and 64 lowercase hex characters)", d)
	}
	return nil
}

// Container is one container of a Pod as its status reports it.
type Container struct {
	Name    string `json:"name"`
	Kind    string `json:"kind"` // container, initContainer or ephemeralContainer
	Image   string `json:"image"`
	ImageID string `json:"imageID,omitempty"`
	Digest  string `json:"digest,omitempty"` // empty until the container has started
}

// Containers lists a Pod's containers in spec order (init containers
// first), with the digests their statuses report.
func Containers(pod *corev1.Pod) []Container {
	var out []Container
	add := func(kind string, specs []string, images map[string]string, statuses []corev1.ContainerStatus) {
		byName := make(map[string]corev1.ContainerStatus, len(statuses))
		for _, s := range statuses {
			byName[s.Name] = s
		}
		for _, name := range specs {
			c := Container{Name: name, Kind: kind, Image: images[name]}
			if s, ok := byName[name]; ok {
				c.ImageID = s.ImageID
				if d, ok := Digest(s.ImageID); ok {
					c.Digest = d
				}
			}
			out = append(out, c)
		}
	}
	names, images := specNames(pod.Spec.InitContainers)
	add("initContainer", names, images, pod.Status.InitContainerStatuses)
	names, images = specNames(pod.Spec.Containers)
	add("container", names, images, pod.Status.ContainerStatuses)
	names, images = nil, map[string]string{}
	for _, c := range pod.Spec.EphemeralContainers {
		names = append(names, c.Name)
		images[c.Name] = c.Image
	}
	add("ephemeralContainer", names, images, pod.Status.EphemeralContainerStatuses)
	return out
}

func specNames(cs []corev1.Container) ([]string, map[string]string) {
	names := make([]string, 0, len(cs))
	images := make(map[string]string, len(cs))
	for _, c := range cs {
		names = append(names, c.Name)
		images[c.Name] = c.Image
	}
	return names, images
}

// Owner returns the workload that runs a Pod: its controller, with a
// Deployment's ReplicaSet (named <deployment>-<pod-template-hash>) and a
// CronJob's Job (named <cronjob>-<schedule time>) left out only where the
// name says so; a Pod without a controller is its own workload.
func Owner(pod *corev1.Pod) (kind, name string) {
	ref := metav1.GetControllerOf(pod)
	if ref == nil {
		return "Pod", pod.Name
	}
	if ref.Kind == "ReplicaSet" {
		if hash := pod.Labels["pod-template-hash"]; hash != "" {
			if dep, ok := strings.CutSuffix(ref.Name, "-"+hash); ok {
				return "Deployment", dep
			}
		}
	}
	return ref.Kind, ref.Name
}

// Workloads maps each digest running in pods to the workloads running it,
// in the shape results-api's runningIn has.
func Workloads(pods []corev1.Pod) map[string][]resultsapi.RunningWorkload {
	type key struct{ digest, ns, kind, name string }
	type acc struct {
		containers map[string]bool
		pods       int
	}
	seen := map[key]*acc{}
	for i := range pods {
		pod := &pods[i]
		kind, name := Owner(pod)
		counted := map[key]bool{}
		for _, c := range Containers(pod) {
			if c.Digest == "" {
				continue
			}
			k := key{c.Digest, pod.Namespace, kind, name}
			a := seen[k]
			if a == nil {
				a = &acc{containers: map[string]bool{}}
				seen[k] = a
			}
			a.containers[c.Name] = true
			if !counted[k] {
				counted[k] = true
				a.pods++
			}
		}
	}
	out := map[string][]resultsapi.RunningWorkload{}
	for k, a := range seen {
		w := resultsapi.RunningWorkload{Namespace: k.ns, Kind: k.kind, Name: k.name, Pods: a.pods}
		for c := range a.containers {
			w.Containers = append(w.Containers, c)
		}
		sort.Strings(w.Containers)
		out[k.digest] = append(out[k.digest], w)
	}
	for _, ws := range out {
		sort.Slice(ws, func(i, j int) bool {
			if ws[i].Namespace != ws[j].Namespace {
				return ws[i].Namespace < ws[j].Namespace
			}
			if ws[i].Kind != ws[j].Kind {
				return ws[i].Kind < ws[j].Kind
			}
			return ws[i].Name < ws[j].Name
		})
	}
	return out
}
