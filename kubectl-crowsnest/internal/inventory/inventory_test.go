package inventory

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

var d1 = "sha256:" + strings.Repeat("a", 64)

func TestDigest(t *testing.T) {
	for in, want := range map[string]string{
		"docker-pullable://nginx@" + d1:     d1,
		"docker.io/library/nginx@" + d1:     d1,
		"localhost:5000/r:1@" + d1:          d1,
		d1:                                  d1,
		"containerd://" + d1:                d1,
		"":                                  "",
		"sha256:" + strings.Repeat("A", 64): "",
		"nginx@sha256:abc":                  "",
		"nginx:1.27":                        "",
		"sha512:" + strings.Repeat("a", 64): "",
		"repo@" + d1 + "x":                  "",
	} {
		got, ok := Digest(in)
		if (want == "") == ok || (ok && got != want) {
			t.Errorf("Digest(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}

func TestOwner(t *testing.T) {
	rs := func(name string, hash string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: name, Controller: ptr.To(true)}}}}
		if hash != "" {
			p.Labels = map[string]string{"pod-template-hash": hash}
		}
		return p
	}
	for _, tc := range []struct {
		pod        *corev1.Pod
		kind, name string
	}{
		{rs("web-5d8f", "5d8f"), "Deployment", "web"},
		{rs("web-5d8f", ""), "ReplicaSet", "web-5d8f"},      // a ReplicaSet of its own
		{rs("web-5d8f", "other"), "ReplicaSet", "web-5d8f"}, // the hash does not match the name
		{&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "solo"}}, "Pod", "solo"},
		{&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db-0", OwnerReferences: []metav1.OwnerReference{
			{Kind: "Something", Name: "not-controller"}, {Kind: "StatefulSet", Name: "db", Controller: ptr.To(true)}}}}, "StatefulSet", "db"},
	} {
		if kind, name := Owner(tc.pod); kind != tc.kind || name != tc.name {
			t.Errorf("Owner(%v) = %s/%s, want %s/%s", tc.pod.OwnerReferences, kind, name, tc.kind, tc.name)
		}
	}
}

// TestWorkloads counts each workload's Pods once per digest, however many
// of its containers run it, and keeps namespaces apart.
func TestWorkloads(t *testing.T) {
	d2 := "sha256:" + strings.Repeat("b", 64)
	pod := func(ns, name string, ids ...string) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			Labels:          map[string]string{"pod-template-hash": "h"},
			OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "web-h", Controller: ptr.To(true)}}}}
		for i, id := range ids {
			c := string(rune('a' + i))
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: c})
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: c, ImageID: id})
		}
		return p
	}
	got := Workloads([]corev1.Pod{
		pod("shop", "web-h-1", "r@"+d1, "r@"+d1, "r2@"+d2),
		pod("shop", "web-h-2", "r@"+d1, "", ""),
		pod("test", "web-h-1", "r@"+d1),
	})
	w := got[d1]
	if len(w) != 2 || w[0].Namespace != "shop" || w[0].Pods != 2 || strings.Join(w[0].Containers, ",") != "a,b" ||
		w[1].Namespace != "test" || w[1].Pods != 1 || w[1].Kind != "Deployment" || w[1].Name != "web" {
		t.Fatalf("d1: %+v", w)
	}
	if w := got[d2]; len(w) != 1 || w[0].Pods != 1 || strings.Join(w[0].Containers, ",") != "c" {
		t.Fatalf("d2: %+v", w)
	}
	if len(got) != 2 {
		t.Fatalf("%d digests, want 2", len(got))
	}
}
