package exception

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
)

// The resources watched (crowsnest.dev/v1alpha1). results-api reads them
// through the dynamic client: the operator's API module stays out of its
// go.mod, and the fields read are few (spec, below).
var (
	NamespacedResource = schema.GroupVersionResource{Group: "crowsnest.dev", Version: "v1alpha1", Resource: "vulnerabilityexceptions"}
	ClusterResource    = schema.GroupVersionResource{Group: "crowsnest.dev", Version: "v1alpha1", Resource: "clustervulnerabilityexceptions"}
)

// spec is the part of the custom resources read here.
type spec struct {
	Vulnerabilities []string    `json:"vulnerabilities"`
	Packages        []string    `json:"packages"`
	Images          []string    `json:"images"`
	Status          string      `json:"status"`
	Justification   string      `json:"justification"`
	Statement       string      `json:"statement"`
	ActionStatement string      `json:"actionStatement"`
	Owner           string      `json:"owner"`
	Ticket          string      `json:"ticket"`
	ExpiresAt       metav1.Time `json:"expiresAt"`
	ExpiredOnFix    bool        `json:"expiredOnFix"`
}

// FromUnstructured reads an exception from its custom resource.
func FromUnstructured(u *unstructured.Unstructured) (*Exception, error) {
	raw, ok := u.Object["spec"]
	if !ok {
		return nil, fmt.Errorf("%s %s/%s has no spec", u.GetKind(), u.GetNamespace(), u.GetName())
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil, fmt.Errorf("encode spec of %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	var sp spec
	if err := json.Unmarshal(b, &sp); err != nil {
		return nil, fmt.Errorf("decode spec of %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	kind := KindNamespaced
	if u.GetNamespace() == "" {
		kind = KindCluster
	}
	e := &Exception{Ref: Ref{Kind: kind, Namespace: u.GetNamespace(), Name: u.GetName()},
		Created: u.GetCreationTimestamp().UTC(), Packages: sp.Packages, Images: sp.Images, Status: sp.Status,
		Justification: sp.Justification, Statement: sp.Statement, ActionStatement: sp.ActionStatement,
		Owner: sp.Owner, Ticket: sp.Ticket, ExpiresAt: sp.ExpiresAt.UTC(), ExpiredOnFix: sp.ExpiredOnFix}
	for _, id := range sp.Vulnerabilities {
		e.Vulnerabilities = append(e.Vulnerabilities, strings.ToUpper(id))
	}
	return e, nil
}

// Watcher keeps a Set of every exception of the cluster up to date from
// two informers. The Set is rebuilt on the first read after a change.
type Watcher struct {
	factory dynamicinformer.DynamicSharedInformerFactory
	infs    []cache.SharedIndexInformer
	policy  Policy

	mu    sync.Mutex
	dirty bool
	set   *Set
}

// NewWatcher returns a Watcher over client; Start it.
func NewWatcher(client dynamic.Interface, policy Policy) (*Watcher, error) {
	if client == nil {
		return nil, fmt.Errorf("exception watcher needs a kubernetes client")
	}
	f := dynamicinformer.NewDynamicSharedInformerFactory(client, 0)
	w := &Watcher{factory: f, policy: policy, dirty: true}
	for _, gvr := range []schema.GroupVersionResource{NamespacedResource, ClusterResource} {
		inf := f.ForResource(gvr).Informer()
		mark := func(any) { w.markDirty() }
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: mark,
			UpdateFunc: func(_, o any) { mark(o) }, DeleteFunc: mark}); err != nil {
			return nil, fmt.Errorf("watch %s: %w", gvr.Resource, err)
		}
		w.infs = append(w.infs, inf)
	}
	return w, nil
}

func (w *Watcher) markDirty() {
	w.mu.Lock()
	w.dirty = true
	w.mu.Unlock()
}

// Start runs the informers until ctx ends and waits up to timeout for
// their first list.
func (w *Watcher) Start(ctx context.Context, timeout time.Duration) error {
	w.factory.Start(ctx.Done())
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for _, inf := range w.infs {
		if !cache.WaitForCacheSync(wctx.Done(), inf.HasSynced) {
			return fmt.Errorf("exceptions not listed within %s (are the CRDs installed, and may results-api list and watch "+
				"vulnerabilityexceptions and clustervulnerabilityexceptions.crowsnest.dev?)", timeout)
		}
	}
	return nil
}

// Shutdown stops the informers (cancel Start's context first).
func (w *Watcher) Shutdown() { w.factory.Shutdown() }

// Set returns the current exceptions. Objects that cannot be read are
// left out (the API server validated them, so this takes a schema change).
func (w *Watcher) Set() *Set {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.dirty {
		return w.set
	}
	var list []*Exception
	for _, inf := range w.infs {
		for _, o := range inf.GetStore().List() {
			if u, ok := o.(*unstructured.Unstructured); ok {
				if e, err := FromUnstructured(u); err == nil {
					list = append(list, e)
				}
			}
		}
	}
	w.set, w.dirty = NewSet(list, w.policy), false
	return w.set
}
