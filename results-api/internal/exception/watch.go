package exception

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
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

// Watcher keeps a Set of every exception and imported OpenVEX document of
// the cluster up to date from four informers. The Set is rebuilt on the
// first read after a change; a document is parsed again only when it
// changed.
type Watcher struct {
	factory dynamicinformer.DynamicSharedInformerFactory
	infs    []cache.SharedIndexInformer // exceptions
	docInfs []cache.SharedIndexInformer // OpenVEX documents
	policy  Policy

	mu     sync.Mutex
	dirty  bool
	set    *Set
	parsed map[string]parsedDocument // by uid
}

// parsedDocument is a document's parse at one resourceVersion.
type parsedDocument struct {
	version string
	rules   []*Exception
	doc     Document
}

// NewWatcher returns a Watcher over client; Start it.
func NewWatcher(client dynamic.Interface, policy Policy) (*Watcher, error) {
	if client == nil {
		return nil, fmt.Errorf("exception watcher needs a kubernetes client")
	}
	f := dynamicinformer.NewDynamicSharedInformerFactory(client, 0)
	w := &Watcher{factory: f, policy: policy, dirty: true, parsed: map[string]parsedDocument{}}
	for _, gvr := range []schema.GroupVersionResource{NamespacedResource, ClusterResource, VEXDocumentResource, ClusterVEXDocumentResource} {
		inf := f.ForResource(gvr).Informer()
		mark := func(any) { w.markDirty() }
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: mark,
			UpdateFunc: func(_, o any) { mark(o) }, DeleteFunc: mark}); err != nil {
			return nil, fmt.Errorf("watch %s: %w", gvr.Resource, err)
		}
		if gvr.Resource == VEXDocumentResource.Resource || gvr.Resource == ClusterVEXDocumentResource.Resource {
			w.docInfs = append(w.docInfs, inf)
		} else {
			w.infs = append(w.infs, inf)
		}
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
	for _, inf := range append(slices.Clone(w.infs), w.docInfs...) {
		if !cache.WaitForCacheSync(wctx.Done(), inf.HasSynced) {
			return fmt.Errorf("exceptions not listed within %s (are the CRDs installed, and may results-api list and watch "+
				"vulnerabilityexceptions, clustervulnerabilityexceptions, vexdocuments and clustervexdocuments.crowsnest.dev?)", timeout)
		}
	}
	return nil
}

// Shutdown stops the informers (cancel Start's context first).
func (w *Watcher) Shutdown() { w.factory.Shutdown() }

// Set returns the current exceptions and imported statements. Exceptions
// that cannot be read are left out (the API server validated them, so this
// takes a schema change); a document that does not parse adds no statement
// and is listed, with the reason, in Set.Documents.
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
	seen := map[string]bool{}
	var docs []Document
	for _, inf := range w.docInfs {
		for _, o := range inf.GetStore().List() {
			u, ok := o.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			uid := string(u.GetUID())
			p, ok := w.parsed[uid]
			if !ok || p.version != u.GetResourceVersion() {
				p.rules, p.doc = DocumentFromUnstructured(u)
				p.version = u.GetResourceVersion()
				w.parsed[uid] = p
			}
			seen[uid] = true
			list = append(list, p.rules...)
			docs = append(docs, p.doc)
		}
	}
	maps.DeleteFunc(w.parsed, func(uid string, _ parsedDocument) bool { return !seen[uid] })
	slices.SortFunc(docs, func(a, b Document) int { return strings.Compare(a.Ref.String(), b.Ref.String()) })
	w.set, w.dirty = NewSet(list, w.policy, docs...), false
	return w.set
}
