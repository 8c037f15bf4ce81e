package discovery

import (
	"errors"
	"iter"
	"slices"
	"sort"
	"strings"
	"unique"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Pod is what the operator keeps of a workload Pod: 64 bytes, its name and
// resourceVersion, plus handles to what thousands of Pods share. Everything
// but the name is canonicalized with unique.Make and held by its Handle, so
// replicas in a namespace share one meta (namespace, labels, owner, node,
// phase, pull secrets) and each distinct container (name, image, imageID)
// is stored once, for as long as some Pod holds it.
//
// Holding the handles matters: a string taken from a Handle's Value does not
// keep the canonical entry alive, so after the next collection the same
// value would be copied again — interning that silently stops working.
type Pod struct {
	Name string
	// ResourceVersion is kept for client-go: its informer delivers an
	// update whose resourceVersion did not change as a resync, which a
	// handler without a resync period never sees.
	ResourceVersion string
	meta            unique.Handle[podMeta]
	containers      []unique.Handle[Container] // init, regular, then ephemeral containers that have started (have an imageID)
}

// podMeta is what replicas of a workload on one node share.
type podMeta struct {
	namespace string
	// labels is the Pod's label set as sorted "key=value" lines.
	labels      string
	owner       Owner // the controller owner reference; zero for a bare Pod
	node        string
	phase       corev1.PodPhase
	deleting    bool
	pullSecrets string // imagePullSecrets names, one per line, in the spec's order
}

// Owner is a Pod's controller.
type Owner struct {
	Kind, Name string
}

// Container is one started container of a Pod.
type Container struct {
	// Image is the reference as written in the Pod spec (nginx:1.27), or
	// the one the kubelet reports when the spec has no container by that
	// name.
	Name, Image, ImageID string
	Init                 bool // an init container
}

// Namespace is the Pod's namespace.
func (p *Pod) Namespace() string { return p.meta.Value().namespace }

// Owner is the Pod's controller; zero for a bare Pod.
func (p *Pod) Owner() Owner { return p.meta.Value().owner }

// NodeName is the node the Pod is bound to, if any.
func (p *Pod) NodeName() string { return p.meta.Value().node }

// Phase is the Pod's phase.
func (p *Pod) Phase() corev1.PodPhase { return p.meta.Value().phase }

// Deleting tells whether the Pod has a deletion timestamp.
func (p *Pod) Deleting() bool { return p.meta.Value().deleting }

// Finished tells whether the Pod no longer runs anything that counts:
// it succeeded, failed or is being deleted.
func (p *Pod) Finished() bool {
	m := p.meta.Value()
	return m.phase == corev1.PodSucceeded || m.phase == corev1.PodFailed || m.deleting
}

// PullSecrets yields the names of the Pod's imagePullSecrets.
func (p *Pod) PullSecrets() iter.Seq[string] {
	return func(yield func(string) bool) {
		for s := range strings.Lines(p.meta.Value().pullSecrets) {
			if !yield(strings.TrimSuffix(s, "\n")) {
				return
			}
		}
	}
}

// Containers yields the Pod's started containers: init, regular, then
// ephemeral.
func (p *Pod) Containers() iter.Seq[Container] {
	return func(yield func(Container) bool) {
		for _, h := range p.containers {
			if !yield(h.Value()) {
				return
			}
		}
	}
}

// NumContainers is the number of the Pod's started containers.
func (p *Pod) NumContainers() int { return len(p.containers) }

// Label returns the value of the label key and whether it is set.
func (p *Pod) Label(key string) (string, bool) {
	for rest := p.meta.Value().labels; rest != ""; {
		var line string
		line, rest, _ = strings.Cut(rest, "\n")
		if k, v, _ := strings.Cut(line, "="); k == key {
			return v, true
		}
	}
	return "", false
}

// GetObjectMeta makes Pod a metav1.ObjectMetaAccessor, which is all that
// client-go's store and namespace index need of it.
func (p *Pod) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Namespace: p.Namespace(), Name: p.Name, ResourceVersion: p.ResourceVersion}
}

// Compact turns a Pod from the API server into the operator's Pod.
func Compact(in *corev1.Pod) *Pod {
	m := podMeta{
		namespace: in.Namespace,
		labels:    labelLines(in.Labels),
		node:      in.Spec.NodeName,
		phase:     in.Status.Phase,
		deleting:  in.DeletionTimestamp != nil,
	}
	if ref := metav1.GetControllerOf(in); ref != nil {
		m.owner = Owner{Kind: ref.Kind, Name: ref.Name}
	}
	var secrets strings.Builder
	for _, s := range in.Spec.ImagePullSecrets {
		if s.Name != "" {
			secrets.WriteString(s.Name)
			secrets.WriteByte('\n')
		}
	}
	m.pullSecrets = secrets.String()
	p := &Pod{Name: in.Name, ResourceVersion: in.ResourceVersion, meta: unique.Make(m)}
	n := 0
	for _, list := range [][]corev1.ContainerStatus{in.Status.InitContainerStatuses, in.Status.ContainerStatuses, in.Status.EphemeralContainerStatuses} {
		for _, cs := range list {
			if cs.ImageID != "" {
				n++
			}
		}
	}
	if n > 0 {
		p.containers = make([]unique.Handle[Container], 0, n)
	}
	for i, list := range [][]corev1.ContainerStatus{in.Status.InitContainerStatuses, in.Status.ContainerStatuses, in.Status.EphemeralContainerStatuses} {
		for _, cs := range list {
			if cs.ImageID != "" {
				p.containers = append(p.containers, unique.Make(Container{
					Name: cs.Name, Image: specImage(in, i, cs), ImageID: cs.ImageID, Init: i == 0,
				}))
			}
		}
	}
	return p
}

// specImage is the image reference the Pod spec gives the container of
// status cs (list 0: init, 1: regular, 2: ephemeral containers), or the
// status's own when the spec has none.
func specImage(in *corev1.Pod, list int, cs corev1.ContainerStatus) string {
	switch list {
	case 0, 1:
		spec := in.Spec.InitContainers
		if list == 1 {
			spec = in.Spec.Containers
		}
		for i := range spec {
			if spec[i].Name == cs.Name && spec[i].Image != "" {
				return spec[i].Image
			}
		}
	default:
		for i := range in.Spec.EphemeralContainers {
			if c := &in.Spec.EphemeralContainers[i]; c.Name == cs.Name && c.Image != "" {
				return c.Image
			}
		}
	}
	return cs.Image
}

// TransformCompact is a client-go informer transform to the operator's Pod;
// tombstones and other objects pass through.
func TransformCompact(obj any) (any, error) {
	if pod, ok := obj.(*corev1.Pod); ok {
		return Compact(pod), nil
	}
	return obj, nil
}

// Digests returns the digests of the Pod's containers that can be parsed,
// without duplicates.
func (p *Pod) Digests() []string {
	var out []string
	for c := range p.Containers() {
		img, err := Normalize(c.ImageID)
		if (err != nil && !errors.Is(err, ErrNotPullable)) || img.Digest == "" {
			continue
		}
		d := img.Digest
		if !containsString(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// Relevant tells whether anything the reconciler or the inventory reads
// differs between two versions of a Pod.
func Relevant(a, b *Pod) bool {
	return a.meta != b.meta || !slices.Equal(a.containers, b.containers)
}

func labelLines(labels map[string]string) string {
	if len(labels) == 0 {
		return ""
	}
	lines := make([]string, 0, len(labels))
	for k, v := range labels {
		lines = append(lines, k+"="+v)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
