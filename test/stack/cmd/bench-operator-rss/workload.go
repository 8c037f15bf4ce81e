package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// LabelCovered marks the namespaces the benchmark's ClusterScanner selects.
const LabelCovered = "bench.crowsnest.dev/covered"

// layout places Pods and digests: Pods fill namespaces in contiguous
// blocks, and Pod i runs digest i mod D/2 in its first container and
// D/2 + i mod D/2 in its second (as BenchmarkOperatorScale does), so that
// a digest runs in many namespaces.
type layout struct{ Size }

func (l layout) namespace(i int) string { return fmt.Sprintf("bench-%04d", i*l.Namespaces/l.Pods) }

func (l layout) namespaces() []string {
	out := make([]string, 0, l.Namespaces)
	for i := range l.Namespaces {
		out = append(out, fmt.Sprintf("bench-%04d", i))
	}
	return out
}

func (l layout) digests(i int) (a, b int) {
	half := l.Digests / 2
	return i % half, half + i%half
}

// running is the number of distinct digests the Pods run.
func (l layout) running() int {
	return 2 * min(l.Pods, l.Digests/2)
}

// namespacesPerDigest is how many namespaces run each digest: Pods
// i, i+D/2, i+D… run it, one per namespace while D/2 is at least the
// Pods per namespace.
func (l layout) namespacesPerDigest() int {
	return max(1, min(l.Namespaces, l.Pods/max(1, l.Digests/2)))
}

// digest is the n-th benchmark digest.
func digest(n int) string { return fmt.Sprintf("sha256:%064x", 0xbe0000+n) }

// createNamespaces creates the layout's namespaces, labelled as covered.
func createNamespaces(ctx context.Context, cs kubernetes.Interface, names []string, workers int) error {
	return parallel(ctx, len(names), workers, nil, func(ctx context.Context, i int) error {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: names[i], Labels: map[string]string{LabelCovered: "true"}}}
		_, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
		return err
	})
}

// runPod creates a Pod and, playing the kubelet, reports its containers
// as running with the given digests through the status subresource.
func runPod(ctx context.Context, cs kubernetes.Interface, ns, name string, digests ...string) error {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": "bench"}}}
	for i := range digests {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: fmt.Sprintf("c%d", i), Image: fmt.Sprintf("ghcr.io/bench/app-%d:1", i)})
	}
	created, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create pod %s/%s: %w", ns, name, err)
	}
	return setRunning(ctx, cs, created, digests...)
}

// setRunning writes a running status with one container per digest.
func setRunning(ctx context.Context, cs kubernetes.Interface, p *corev1.Pod, digests ...string) error {
	p.Status.Phase = corev1.PodRunning
	p.Status.ContainerStatuses = nil
	for i, d := range digests {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: fmt.Sprintf("c%d", i), Image: fmt.Sprintf("ghcr.io/bench/app-%d:1", i), ImageID: fmt.Sprintf("ghcr.io/bench/app-%d@%s", i, d),
			Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}},
		})
	}
	if _, err := cs.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("pod status %s/%s: %w", p.Namespace, p.Name, err)
	}
	return nil
}

// createPods creates and starts every Pod of the layout.
func (b *bench) createPods(ctx context.Context, cs kubernetes.Interface, l layout) error {
	return parallel(ctx, l.Pods, b.o.Workers, b.progress("pods created and running", l.Pods), func(ctx context.Context, i int) error {
		x, y := l.digests(i)
		return runPod(ctx, cs, l.namespace(i), fmt.Sprintf("app-%06d", i), digest(x), digest(y))
	})
}

// putReport uploads a minimal valid CycloneDX report for d with the admin
// token, as the uploader of a finished scan would.
func putReport(ctx context.Context, c *http.Client, apiURL, token, d string) error {
	bom := `{"bomFormat":"CycloneDX","specVersion":"1.6","version":1,
"metadata":{"component":{"bom-ref":"img","type":"container","name":"ghcr.io/bench/app","version":"` + d + `"}},
"components":[{"bom-ref":"pkg:apk/alpine/musl@1.2.5","type":"library","name":"musl","version":"1.2.5","purl":"pkg:apk/alpine/musl@1.2.5"}],
"vulnerabilities":[{"bom-ref":"v1","id":"CVE-2026-0001","source":{"name":"alpine:distro:alpine:3.20"},"ratings":[{"severity":"high"}],"affects":[{"ref":"pkg:apk/alpine/musl@1.2.5"}]}]}`
	var last error
	for attempt := range 5 {
		if attempt > 0 {
			time.Sleep(time.Duration(attempt) * 200 * time.Millisecond)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, apiURL+"/api/v1/reports/"+d+"?image=ghcr.io/bench/app@"+d, bytes.NewReader([]byte(bom)))
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/vnd.cyclonedx+json")
		resp, err := c.Do(req)
		if err != nil {
			last = err
			continue
		}
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusCreated || resp.StatusCode == http.StatusOK {
			return nil
		}
		last = fmt.Errorf("PUT report %s: %s", d, resp.Status)
	}
	return last
}

// parallel runs fn for 0..n-1 on workers goroutines and returns the first
// error; progress (when set) is called after each success.
func parallel(ctx context.Context, n, workers int, progress func(), fn func(context.Context, int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		next  atomic.Int64
		once  sync.Once
		first error
	)
	for range min(workers, max(n, 1)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := fn(ctx, i); err != nil {
					once.Do(func() { first = err; cancel() })
					return
				}
				if progress != nil {
					progress()
				}
			}
		})
	}
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}

// progress returns a counter that logs every 10 seconds and at the end.
func (b *bench) progress(what string, total int) func() {
	var (
		mu    sync.Mutex
		done  int
		start = time.Now()
		last  = start
	)
	return func() {
		mu.Lock()
		defer mu.Unlock()
		done++
		if done == total || time.Since(last) >= 10*time.Second {
			last = time.Now()
			rate := float64(done) / time.Since(start).Seconds()
			b.logf("%d/%d %s (%.0f/s)", done, total, what, rate)
		}
	}
}
