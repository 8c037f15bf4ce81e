package workload

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// ScanPodSelector leaves out the scan-Job Pods, which run on the real node
// whose kubelet reports their imageIDs itself.
const ScanPodSelector = "app.kubernetes.io/name!=crowsnest-scan"

// Resolver maps a Pod's image reference to the imageID a kubelet reports.
type Resolver func(image string) (imageID string, ok bool)

// ImageIDWriter fills in containerStatuses[].imageID of running Pods.
type ImageIDWriter struct {
	Client  kubernetes.Interface
	Resolve Resolver
	Log     *slog.Logger
	// Written, when set, is called after each Pod gets its imageIDs (the
	// moment a kubelet would report them), for latency measurements.
	Written func(namespace, name string, at time.Time)
	// SkipNode is the real node: its kubelet reports imageIDs itself.
	SkipNode string
}

// Run watches Pods until ctx ends.
func (w *ImageIDWriter) Run(ctx context.Context) error {
	factory := informers.NewSharedInformerFactoryWithOptions(w.Client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = ScanPodSelector }))
	inf := factory.Core().V1().Pods()
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	defer q.ShutDown()
	enqueue := func(obj any) {
		if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
			q.Add(key)
		}
	}
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, n any) { enqueue(n) },
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.Informer().HasSynced) {
		return ctx.Err()
	}
	lister := inf.Lister()
	for range 4 {
		go func() {
			for {
				key, quit := q.Get()
				if quit {
					return
				}
				ns, name, _ := cache.SplitMetaNamespaceKey(key)
				pod, err := lister.Pods(ns).Get(name)
				if err == nil {
					err = w.write(ctx, pod)
				}
				if err != nil && !apierrors.IsNotFound(err) {
					w.Log.Warn("write imageID", "namespace", ns, "pod", name, "error", err)
					q.AddRateLimited(key)
				} else {
					q.Forget(key)
				}
				q.Done(key)
			}
		}()
	}
	<-ctx.Done()
	return nil
}

func (w *ImageIDWriter) write(ctx context.Context, pod *corev1.Pod) error {
	if w.SkipNode != "" && pod.Spec.NodeName == w.SkipNode {
		return nil
	}
	changed := false
	statuses := make([]corev1.ContainerStatus, len(pod.Status.ContainerStatuses))
	for i, cs := range pod.Status.ContainerStatuses {
		statuses[i] = cs
		if cs.ImageID != "" || cs.State.Running == nil {
			continue
		}
		id, ok := w.Resolve(cs.Image)
		if !ok {
			continue // not a demo image: like a runtime that cannot tell
		}
		statuses[i].ImageID = id
		changed = true
	}
	if !changed {
		return nil
	}
	p := pod.DeepCopy()
	p.Status.ContainerStatuses = statuses
	if _, err := w.Client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update pod status: %w", err)
	}
	if w.Written != nil {
		w.Written(p.Namespace, p.Name, time.Now())
	}
	return nil
}
