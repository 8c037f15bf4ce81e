// Package podcache is the operator's cache of workload Pods: a client-go
// informer that stores each Pod as a compact discovery.Pod (64 bytes and
// handles to what replicas share), indexed by namespace and by digest, and
// read in place, never copied. controller-runtime's cache stores whole
// corev1.Pods and copies each one into a List's result, which at 100,000
// Pods is what outgrew the operator's memory limit. The operator's own scan
// Pods are left out (label selector); controller-runtime caches those.
package podcache

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/crowsnest-dev/crowsnest/operator/internal/discovery"
)

// DigestIndex is the index of Pods by the digests their containers run.
const DigestIndex = "digest"

// selector keeps the operator's own scan Pods out.
const selector = discovery.ManagedByLabel + "!=" + discovery.ManagedByValue

// Cache holds the workload Pods of the watched namespaces.
type Cache struct {
	informers []toolscache.SharedIndexInformer
}

// New makes the cache for namespaces (none: the whole cluster). Start runs it.
func New(cfg *rest.Config, namespaces []string) (*Cache, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("pod cache client: %w", err)
	}
	if len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	c := &Cache{}
	for _, ns := range namespaces {
		lw := toolscache.NewFilteredListWatchFromClient(cs.CoreV1().RESTClient(), "pods", ns, func(o *metav1.ListOptions) {
			o.LabelSelector = selector
		})
		inf := toolscache.NewSharedIndexInformerWithOptions(lw, &corev1.Pod{}, toolscache.SharedIndexInformerOptions{
			Indexers: indexers(),
		})
		if err := inf.SetTransform(discovery.TransformCompact); err != nil {
			return nil, fmt.Errorf("pod cache transform: %w", err)
		}
		c.informers = append(c.informers, inf)
	}
	return c, nil
}

// indexers are the cache's indexes: by namespace and by digest.
func indexers() toolscache.Indexers {
	return toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc, DigestIndex: digestIndex}
}

func digestIndex(obj any) ([]string, error) {
	p, ok := obj.(*discovery.Pod)
	if !ok {
		return nil, nil
	}
	return p.Digests(), nil
}

// Start runs the informers until ctx ends (manager.Runnable). It runs on
// every replica, so a standby's cache is warm when it becomes leader.
func (c *Cache) Start(ctx context.Context) error {
	for _, inf := range c.informers {
		go inf.RunWithContext(ctx)
	}
	if c.WaitForSync(ctx) == nil {
		// The initial list decoded every Pod in full before the transform
		// kept a quarter of it: return that garbage to the kernel now
		// rather than at the runtime's next forced collection minutes
		// later, which is when the RSS a memory limit sees would drop.
		debug.FreeOSMemory()
	}
	<-ctx.Done()
	return nil
}

// NeedLeaderElection is false: see Start.
func (c *Cache) NeedLeaderElection() bool { return false }

// WaitForSync waits until every informer has listed its Pods.
func (c *Cache) WaitForSync(ctx context.Context) error {
	synced := make([]toolscache.InformerSynced, len(c.informers))
	for i, inf := range c.informers {
		synced[i] = inf.HasSynced
	}
	if !toolscache.WaitForCacheSync(ctx.Done(), synced...) {
		return errors.New("pod cache did not sync")
	}
	return nil
}

// HasSynced tells whether every informer has listed its Pods.
func (c *Cache) HasSynced() bool {
	for _, inf := range c.informers {
		if !inf.HasSynced() {
			return false
		}
	}
	return true
}

// InNamespace returns the cached Pods of a namespace. They are the cache's
// own: read them, never change them.
func (c *Cache) InNamespace(ns string) []*discovery.Pod {
	return c.byIndex(toolscache.NamespaceIndex, ns)
}

// Namespaces returns the namespaces that have cached Pods.
func (c *Cache) Namespaces() []string {
	var out []string
	for _, inf := range c.informers {
		out = append(out, inf.GetIndexer().ListIndexFuncValues(toolscache.NamespaceIndex)...)
	}
	return out
}

// Running returns the cached Pods that run digest.
func (c *Cache) Running(digest string) []*discovery.Pod {
	return c.byIndex(DigestIndex, digest)
}

func (c *Cache) byIndex(index, value string) []*discovery.Pod {
	var out []*discovery.Pod
	for _, inf := range c.informers {
		objs, err := inf.GetIndexer().ByIndex(index, value)
		if err != nil {
			continue // only an unknown index name errs
		}
		for _, o := range objs {
			if p, ok := o.(*discovery.Pod); ok {
				out = append(out, p)
			}
		}
	}
	return out
}

// OnChange calls fn with the namespace of every Pod that is added or
// deleted, or changes what the operator reads, once the initial list is done
// (the controller reconciles every Scanner at start anyway). fn must not
// block.
func (c *Cache) OnChange(fn func(namespace string)) error {
	h := toolscache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			if p, ok := obj.(*discovery.Pod); ok && !initial {
				fn(p.Namespace())
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*discovery.Pod)
			n, ok2 := newObj.(*discovery.Pod)
			if ok1 && ok2 && discovery.Relevant(o, n) {
				fn(n.Namespace())
			}
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if p, ok := obj.(*discovery.Pod); ok {
				fn(p.Namespace())
			}
		},
	}
	for _, inf := range c.informers {
		if _, err := inf.AddEventHandler(h); err != nil {
			return fmt.Errorf("pod cache handler: %w", err)
		}
	}
	return nil
}
