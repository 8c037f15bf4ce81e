package executor

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// ScanPodLabel selects the Pods the executor runs (set by the operator).
const ScanPodLabel = "app.kubernetes.io/name=crowsnest-scan"

// Executor runs scan-Job Pods.
type Executor struct {
	Client kubernetes.Interface
	// Binary maps a container to the local executable standing in for its
	// image (e.g. anchore/grype:v0.121.2 → bin/grype).
	Binary func(c corev1.Container) (string, error)
	// Volume, when it returns a non-empty path, backs the named volume with
	// that host directory instead of a fresh temp dir (the imported Grype DB).
	Volume func(v corev1.Volume) string
	// TokenFile, when set, replaces every projected service-account token
	// with this file's content (for a results-api without TokenReview).
	TokenFile string
	// Env is added to every container's environment (after the Pod's own).
	Env     []string
	WorkDir string // per-Pod temp dirs go here
	// Parallel bounds the Pods running at once; others wait, unstarted.
	Parallel int
	// Timeout bounds one container's run.
	Timeout time.Duration
	Log     *slog.Logger

	mu      sync.Mutex
	running map[types.UID]context.CancelFunc
	holds   map[string][]chan struct{} // digest hash → open gates (Hold)
	sem     chan struct{}
}

// Run watches scheduled scan Pods until ctx ends.
func (e *Executor) Run(ctx context.Context) error {
	if e.Parallel < 1 {
		e.Parallel = 4
	}
	if e.Timeout <= 0 {
		e.Timeout = 10 * time.Minute
	}
	e.sem = make(chan struct{}, e.Parallel)
	e.running = map[types.UID]context.CancelFunc{}
	if err := os.MkdirAll(e.WorkDir, 0o700); err != nil {
		return fmt.Errorf("executor work dir: %w", err)
	}
	factory := informers.NewSharedInformerFactoryWithOptions(e.Client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = ScanPodLabel }))
	inf := factory.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { e.observe(ctx, obj) },
		UpdateFunc: func(_, obj any) { e.observe(ctx, obj) },
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if pod, ok := obj.(*corev1.Pod); ok {
				e.cancel(pod.UID)
				e.mu.Lock()
				delete(e.running, pod.UID) // a deleted Pod's UID never returns
				e.mu.Unlock()
			}
		},
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	<-ctx.Done()
	factory.Shutdown()
	return nil
}

// observe starts a scheduled, not yet started Pod, and stops a Pod that is
// being deleted.
func (e *Executor) observe(ctx context.Context, obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if pod.DeletionTimestamp != nil {
		e.cancel(pod.UID)
		return
	}
	if pod.Spec.NodeName == "" || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return
	}
	e.mu.Lock()
	if _, seen := e.running[pod.UID]; seen {
		e.mu.Unlock()
		return
	}
	pctx, cancel := context.WithCancel(ctx)
	e.running[pod.UID] = cancel
	e.mu.Unlock()
	go func() {
		defer cancel()
		select {
		case e.sem <- struct{}{}:
		case <-pctx.Done():
			return
		}
		defer func() { <-e.sem }()
		log := e.Log.With("namespace", pod.Namespace, "pod", pod.Name)
		if err := e.runPod(pctx, pod.DeepCopy(), log); err != nil && pctx.Err() == nil {
			log.Error("scan pod", "error", err)
		}
	}()
}

// cancel stops a running Pod's processes. The UID stays known, so a Pod is
// never started twice.
func (e *Executor) cancel(uid types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if c, ok := e.running[uid]; ok && c != nil {
		c()
		e.running[uid] = nil
	}
}
