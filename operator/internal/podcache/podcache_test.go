package podcache

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/crowsnest-dev/crowsnest/operator/internal/discovery"
	"github.com/crowsnest-dev/crowsnest/test/support/kubetest"
)

const (
	digestA = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	digestB = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

// TestCacheIndexesWorkloadPodsOnly runs the cache on a real kube-apiserver:
// workload Pods are found by namespace and by digest, the operator's own
// scan Pods are never cached, a namespaced cache sees only its namespaces,
// and OnChange fires for what the reconciler reads (a new imageID, a
// deletion) but not for what it does not (an annotation).
func TestCacheIndexesWorkloadPodsOnly(t *testing.T) {
	cfg := kubetest.StartT(t)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, ns := range []string{"one", "two"} {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	run := func(ns, name, digest string, labels map[string]string) *corev1.Pod {
		t.Helper()
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.test/app:1"}}},
		}
		p, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if digest != "" {
			p.Status.Phase = corev1.PodRunning
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Image: "registry.test/app:1", ImageID: "registry.test/app@" + digest}}
			if p, err = cs.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		return p
	}
	run("one", "a", digestA, nil)
	run("one", "b", digestB, nil)
	run("two", "a", digestA, map[string]string{"app": "x"})
	run("two", "scan", digestB, map[string]string{discovery.ManagedByLabel: discovery.ManagedByValue})

	all := start(t, ctx, cfg, nil)
	if got := names(all.InNamespace("one")); got != "one/a one/b" {
		t.Errorf("InNamespace(one) = %s", got)
	}
	if got := names(all.InNamespace("two")); got != "two/a" {
		t.Errorf("InNamespace(two) = %s (the scan Pod must not be cached)", got)
	}
	if got := names(all.Running(digestA)); got != "one/a two/a" {
		t.Errorf("Running(A) = %s", got)
	}
	if got := names(all.Running(digestB)); got != "one/b" {
		t.Errorf("Running(B) = %s (the scan Pod must not be cached)", got)
	}
	if v, ok := all.InNamespace("two")[0].Label("app"); v != "x" || !ok {
		t.Errorf("label app of two/a = %q, %v", v, ok)
	}

	only := start(t, ctx, cfg, []string{"two"})
	if got := names(only.Running(digestA)); got != "two/a" {
		t.Errorf("a cache of namespace two: Running(A) = %s", got)
	}
	if got := names(only.InNamespace("one")); got != "" {
		t.Errorf("a cache of namespace two: InNamespace(one) = %s", got)
	}

	changes := &changeLog{}
	if err := all.OnChange(changes.add); err != nil {
		t.Fatal(err)
	}
	// Not read by the reconciler: no change.
	p, err := cs.CoreV1().Pods("one").Get(ctx, "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Annotations = map[string]string{"note": "irrelevant"}
	if _, err := cs.CoreV1().Pods("one").Update(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Read by the reconciler: a new Pod gets an imageID, a Pod goes away.
	run("two", "c", digestB, nil)
	if err := cs.CoreV1().Pods("one").Delete(ctx, "b", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "B running only in two/c", func() error {
		if got := names(all.Running(digestB)); got != "two/c" {
			return fmt.Errorf("Running(B) = %s", got)
		}
		return nil
	})
	waitFor(t, "three changes", func() error {
		if n := changes.len(); n < 3 {
			return fmt.Errorf("%d changes", n)
		}
		return nil
	})
	// The annotation update was sent first and an informer delivers in
	// order, so a change it made would come first here. Runs of one
	// namespace merged: the create and imageID of two/c, then the deletion
	// in one (marked, then gone).
	if got := changes.runs(); got != "two one" {
		t.Errorf("OnChange namespaces = %q (runs %q), want two (create, imageID of two/c) then one (deletion)", changes.get(), got)
	}
}

func start(t *testing.T, ctx context.Context, cfg *rest.Config, namespaces []string) *Cache {
	t.Helper()
	c, err := New(cfg, namespaces)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	sync, stop := context.WithTimeout(ctx, 30*time.Second)
	defer stop()
	if err := c.WaitForSync(sync); err != nil {
		t.Fatal(err)
	}
	if !c.HasSynced() {
		t.Fatal("HasSynced false after WaitForSync")
	}
	return c
}

func names(pods []*discovery.Pod) string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Namespace() + "/" + p.Name
	}
	sort.Strings(out)
	s := fmt.Sprint(out)
	return s[1 : len(s)-1]
}

type changeLog struct {
	mu sync.Mutex
	ns []string
}

func (c *changeLog) add(ns string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ns = append(c.ns, ns)
}

// runs is the namespaces with consecutive repeats merged.
func (c *changeLog) runs() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, ns := range c.ns {
		if len(out) == 0 || out[len(out)-1] != ns {
			out = append(out, ns)
		}
	}
	s := fmt.Sprint(out)
	return s[1 : len(s)-1]
}

func (c *changeLog) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.ns)
}

func (c *changeLog) get() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := fmt.Sprint(c.ns)
	return s[1 : len(s)-1]
}

func waitFor(t *testing.T, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
