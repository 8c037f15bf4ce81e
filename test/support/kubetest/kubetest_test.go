package kubetest_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crowsnest-dev/crowsnest/test/support/internal/orphan"
	"github.com/crowsnest-dev/crowsnest/test/support/kubetest"
)

// TestControlPlaneRoundTrip proves the real kube-apiserver and etcd run: it
// checks the server's reported version and writes and reads back a Pod.
func TestControlPlaneRoundTrip(t *testing.T) {
	cfg := kubetest.StartT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	info, err := dc.ServerVersion()
	if err != nil {
		t.Fatalf("server version: %v", err)
	}
	if info.GitVersion != "v1.36.3" {
		t.Errorf("kube-apiserver reports %q, want v1.36.3 (version ldflags missing?)", info.GitVersion)
	}

	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "smoke", Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name:  "app",
			Image: "registry.example/app@sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		}}},
	}
	if err := c.Create(ctx, pod); err != nil {
		t.Fatalf("create pod: %v", err)
	}
	var got corev1.Pod
	if err := c.Get(ctx, client.ObjectKeyFromObject(pod), &got); err != nil {
		t.Fatalf("get pod: %v", err)
	}
	if got.UID == "" || got.Spec.Containers[0].Image != pod.Spec.Containers[0].Image {
		t.Errorf("read back pod %+v, want uid set and image %q", got.ObjectMeta, pod.Spec.Containers[0].Image)
	}
}

// TestControlPlaneDiesWithItsProcess: a test binary killed with SIGKILL
// (what `go test -timeout` amounts to) leaves no etcd or kube-apiserver
// running.
func TestControlPlaneDiesWithItsProcess(t *testing.T) {
	if orphan.IsChild() {
		if _, _, err := kubetest.Start(); err != nil {
			t.Fatal(err)
		}
		orphan.Report(orphan.Children())
		return
	}
	orphan.Check(t, "TestControlPlaneDiesWithItsProcess")
}
