package discovery

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// pod builds a Pod; options adjust it (cert-manager's gen style).
func pod(name string, opts ...func(*corev1.Pod)) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	for _, o := range opts {
		o(&p)
	}
	return p
}

func withImageID(container, id string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: container, ImageID: id})
	}
}

func withInitImageID(id string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.InitContainerStatuses = append(p.Status.InitContainerStatuses, corev1.ContainerStatus{Name: "init", ImageID: id})
	}
}

func withLabel(k, v string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels[k] = v
	}
}

func withPullSecret(name string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.ImagePullSecrets = append(p.Spec.ImagePullSecrets, corev1.LocalObjectReference{Name: name})
	}
}

func digest(c byte) string { return "sha256:" + strings.Repeat(string(c), 64) }

func TestCollect(t *testing.T) {
	a, b, c, local := digest('a'), digest('b'), digest('c'), digest('d')
	pods := []corev1.Pod{
		pod("web-1", withImageID("app", "docker-pullable://nginx@"+a), withImageID("sidecar", "ghcr.io/o/proxy@"+b), withPullSecret("regcred")),
		pod("web-2", withImageID("app", "nginx@"+a), withImageID("app2", "mirror.local/nginx@"+a)),
		pod("init-only", withInitImageID("busybox@"+c), withImageID("app", "")),
		pod("ignored", withLabel(DefaultIgnoreLabelForTest, "true"), withImageID("app", "redis@"+digest('e'))),
		pod("scan-job", withLabel(ManagedByLabel, ManagedByValue), withImageID("grype", "anchore/grype@"+digest('f'))),
		pod("done", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }, withImageID("app", "x@"+digest('9'))),
		pod("kind-loaded", withImageID("app", local)),
		pod("garbage", withImageID("app", "not-an-image")),
		pod("pending"),
	}
	inv := Collect(compactAll(pods), DefaultIgnoreLabelForTest)
	if got := sortedDigests(inv.Targets); !reflect.DeepEqual(got, []string{a, b, c}) {
		t.Fatalf("targets = %v, want a, b, c", got)
	}
	ta := inv.Targets[a]
	if ta.Image.Ref() != "docker.io/library/nginx@"+a || !reflect.DeepEqual(ta.Pods, []string{"web-1", "web-2"}) || ta.PodCount != 2 {
		t.Errorf("target a = %+v", ta)
	}
	if !reflect.DeepEqual(ta.PullSecrets, []string{"regcred"}) {
		t.Errorf("pull secrets of a = %v", ta.PullSecrets)
	}
	if inv.Targets[c].Image.Repository != "docker.io/library/busybox" {
		t.Errorf("init container image not counted: %+v", inv.Targets[c])
	}
	if len(inv.NotPullable) != 1 || inv.NotPullable[local] == nil || inv.NotPullable[local].Pods[0] != "kind-loaded" {
		t.Errorf("not pullable = %v", inv.NotPullable)
	}
	if inv.Invalid != 1 {
		t.Errorf("invalid = %d, want 1", inv.Invalid)
	}
}

func TestCollectBoundsPodsPerDigest(t *testing.T) {
	var pods []corev1.Pod
	for i := range 3 * MaxPodsPerDigest {
		pods = append(pods, pod(fmt.Sprintf("p%03d", i), withImageID("a", "nginx@"+digest('a')), withImageID("b", "nginx@"+digest('a'))))
	}
	tg := Collect(compactAll(pods), "x").Targets[digest('a')]
	if len(tg.Pods) != MaxPodsPerDigest || tg.PodCount != 3*MaxPodsPerDigest {
		t.Errorf("pods kept %d (want %d), counted %d (want %d)", len(tg.Pods), MaxPodsPerDigest, tg.PodCount, 3*MaxPodsPerDigest)
	}
}

const DefaultIgnoreLabelForTest = "crowsnest.dev/ignore"

func sortedDigests(m map[string]*Target) []string {
	var out []string
	for _, c := range "abcdef" {
		if m[digest(byte(c))] != nil {
			out = append(out, digest(byte(c)))
		}
	}
	return out
}

// compactAll is what the Pod cache holds of pods.
func compactAll(pods []corev1.Pod) []*Pod {
	out := make([]*Pod, len(pods))
	for i := range pods {
		out[i] = Compact(&pods[i])
	}
	return out
}
