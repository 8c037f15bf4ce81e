package inventory

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	"github.com/crowsnest-dev/crowsnest/operator/internal/discovery"
	"github.com/crowsnest-dev/crowsnest/operator/internal/scanjob"
)

// Owner lookups read object metadata only (PartialObjectMetadata), and keep
// of it the owner reference alone.
// +kubebuilder:rbac:groups=apps,resources=replicasets,verbs=list;watch
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=list;watch

var (
	replicaSets = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}
	jobs        = schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}
	namespaces  = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
)

// owned is what is kept of a ReplicaSet or a Job: its controller.
type owned struct {
	namespace, name string
	owner           discovery.Owner
}

func (o *owned) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Namespace: o.namespace, Name: o.name}
}

// namespaceLabels is what is kept of a Namespace: its labels.
type namespaceLabels struct {
	name   string
	labels map[string]string
}

func (n *namespaceLabels) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Name: n.name, Labels: n.labels}
}

// Owners resolves a Pod's controller owner to its workload through
// metadata-only caches of ReplicaSets and Jobs and, when asked for, keeps
// the labels of Namespaces. Like the pod cache it runs on every replica, so
// a standby is warm when it becomes leader.
type Owners struct {
	replicaSets, jobs []toolscache.SharedIndexInformer
	namespaces        toolscache.SharedIndexInformer // nil: no namespace labels
}

// NewOwners makes the caches for watched (none: the whole cluster); with
// labels, Namespaces are cached too (a cluster-wide list, which a
// namespaced install may not be allowed).
func NewOwners(cfg *rest.Config, watched []string, labels bool) (*Owners, error) {
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("inventory metadata client: %w", err)
	}
	if len(watched) == 0 {
		watched = []string{metav1.NamespaceAll}
	}
	o := &Owners{}
	for _, ns := range watched {
		rs := metadatainformer.NewFilteredMetadataInformer(mc, replicaSets, ns, 0, nil, nil).Informer()
		// The operator's own scan Jobs belong to no workload.
		job := metadatainformer.NewFilteredMetadataInformer(mc, jobs, ns, 0, nil, func(lo *metav1.ListOptions) {
			lo.LabelSelector = scanjob.LabelManagedBy + "!=" + scanjob.ManagedBy
		}).Informer()
		for _, inf := range []toolscache.SharedIndexInformer{rs, job} {
			if err := inf.SetTransform(compactOwned); err != nil {
				return nil, fmt.Errorf("inventory owner cache transform: %w", err)
			}
		}
		o.replicaSets = append(o.replicaSets, rs)
		o.jobs = append(o.jobs, job)
	}
	if labels {
		o.namespaces = metadatainformer.NewFilteredMetadataInformer(mc, namespaces, metav1.NamespaceAll, 0, nil, nil).Informer()
		if err := o.namespaces.SetTransform(compactNamespace); err != nil {
			return nil, fmt.Errorf("inventory namespace cache transform: %w", err)
		}
	}
	return o, nil
}

func compactOwned(obj any) (any, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil
	}
	o := &owned{namespace: m.Namespace, name: m.Name}
	if ref := metav1.GetControllerOf(m); ref != nil {
		o.owner = discovery.Owner{Kind: ref.Kind, Name: ref.Name}
	}
	return o, nil
}

func compactNamespace(obj any) (any, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil
	}
	return &namespaceLabels{name: m.Name, labels: m.Labels}, nil
}

func (o *Owners) all() []toolscache.SharedIndexInformer {
	out := slices.Concat(o.replicaSets, o.jobs)
	if o.namespaces != nil {
		out = append(out, o.namespaces)
	}
	return out
}

// Start runs the informers until ctx ends (manager.Runnable).
func (o *Owners) Start(ctx context.Context) error {
	for _, inf := range o.all() {
		go inf.RunWithContext(ctx)
	}
	<-ctx.Done()
	return nil
}

// NeedLeaderElection is false: see Owners.
func (o *Owners) NeedLeaderElection() bool { return false }

// WaitForSync waits until every informer has listed its objects.
func (o *Owners) WaitForSync(ctx context.Context) error {
	var synced []toolscache.InformerSynced
	for _, inf := range o.all() {
		synced = append(synced, inf.HasSynced)
	}
	if !toolscache.WaitForCacheSync(ctx.Done(), synced...) {
		return errors.New("inventory owner caches did not sync")
	}
	return nil
}

// Workload is the workload a Pod named pod with controller owner runs
// under: a ReplicaSet's Deployment, a Job's CronJob, the owner itself
// otherwise (also while the ReplicaSet or Job is not cached yet), or the
// Pod itself when it has no controller.
func (o *Owners) Workload(namespace, pod string, owner discovery.Owner) (kind, name string) {
	switch owner.Kind {
	case "":
		return eventsv1.KindPod, pod
	case eventsv1.KindReplicaSet:
		if up := controllerOf(o.replicaSets, namespace, owner.Name); up.Kind == eventsv1.KindDeployment {
			return up.Kind, up.Name
		}
	case eventsv1.KindJob:
		if up := controllerOf(o.jobs, namespace, owner.Name); up.Kind == eventsv1.KindCronJob {
			return up.Kind, up.Name
		}
	}
	return owner.Kind, owner.Name
}

func controllerOf(informers []toolscache.SharedIndexInformer, namespace, name string) discovery.Owner {
	key := namespace + "/" + name
	for _, inf := range informers {
		if obj, ok, err := inf.GetStore().GetByKey(key); err == nil && ok {
			if o, ok := obj.(*owned); ok {
				return o.owner
			}
		}
	}
	return discovery.Owner{}
}

// Labels returns a namespace's labels (nil without the namespace cache).
// The map is the cache's own: read it, never change it.
func (o *Owners) Labels(namespace string) map[string]string {
	if o.namespaces == nil {
		return nil
	}
	obj, ok, err := o.namespaces.GetStore().GetByKey(namespace)
	if err != nil || !ok {
		return nil
	}
	if n, ok := obj.(*namespaceLabels); ok {
		return n.labels
	}
	return nil
}

// Namespaces returns the names of every cached Namespace (none without the
// namespace cache).
func (o *Owners) Namespaces() []string {
	if o.namespaces == nil {
		return nil
	}
	return o.namespaces.GetStore().ListKeys()
}

// OnChange calls fn with the namespace of every ReplicaSet or Job that
// appears, goes or changes its controller, and of every Namespace whose
// labels change, once the initial lists are done. fn must not block.
func (o *Owners) OnChange(fn func(namespace string)) error {
	ownerChanged := toolscache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			if v, ok := obj.(*owned); ok && !initial {
				fn(v.namespace)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			a, ok1 := oldObj.(*owned)
			b, ok2 := newObj.(*owned)
			if ok1 && ok2 && a.owner != b.owner {
				fn(b.namespace)
			}
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if v, ok := obj.(*owned); ok {
				fn(v.namespace)
			}
		},
	}
	for _, inf := range slices.Concat(o.replicaSets, o.jobs) {
		if _, err := inf.AddEventHandler(ownerChanged); err != nil {
			return fmt.Errorf("inventory owner cache handler: %w", err)
		}
	}
	if o.namespaces == nil {
		return nil
	}
	// A Namespace that goes away has lost its Pods first: they say so.
	_, err := o.namespaces.AddEventHandler(toolscache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			if n, ok := obj.(*namespaceLabels); ok && !initial && len(n.labels) > 0 {
				fn(n.name)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			a, ok1 := oldObj.(*namespaceLabels)
			b, ok2 := newObj.(*namespaceLabels)
			if ok1 && ok2 && !maps.Equal(a.labels, b.labels) {
				fn(b.name)
			}
		},
	})
	if err != nil {
		return fmt.Errorf("inventory namespace cache handler: %w", err)
	}
	return nil
}
