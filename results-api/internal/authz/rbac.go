package authz

import (
	"context"
	"fmt"
	"slices"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// subjectIndex is the informer index of RoleBindings by the identities
// their subjects name: "user:<username>" (a ServiceAccount subject as its
// username system:serviceaccount:<namespace>:<name>) or "group:<name>".
const subjectIndex = "subject"

// RBACIndex watches every RoleBinding of the cluster and answers in which
// namespaces one could grant an identity anything: those of the
// RoleBindings naming its user, one of its groups or its ServiceAccount.
// ClusterRoleBindings need no index: what one grants it grants in every
// namespace alike, so the cluster-wide SubjectAccessReview that
// ReadAuthorizer makes first for every identity decides them all. Under RBAC (and no other authorizer
// granting reads) a namespace outside that set cannot allow the identity
// to list reports, so ReadAuthorizer reviews only the candidates; the
// SubjectAccessReview stays the decision for each of them. The index can
// only leave namespaces out, never let one in: a stale index (a binding
// added a moment ago) narrows a scope until the informer has the binding,
// it never widens one.
//
// The cache holds only each binding's namespace, name and subjects.
// results-api needs list and watch on rolebindings cluster-wide.
type RBACIndex struct {
	factory  informers.SharedInformerFactory
	bindings cache.SharedIndexInformer
}

// NewRBACIndex returns an index over client's bindings; Start it.
func NewRBACIndex(client kubernetes.Interface) (*RBACIndex, error) {
	if client == nil {
		return nil, fmt.Errorf("authz: rbac index needs a kubernetes client")
	}
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTransform(trimBinding))
	x := &RBACIndex{factory: f, bindings: f.Rbac().V1().RoleBindings().Informer()}
	if err := x.bindings.AddIndexers(cache.Indexers{subjectIndex: subjectKeys}); err != nil {
		return nil, fmt.Errorf("rbac index: %w", err)
	}
	return x, nil
}

// Start runs the informers until ctx ends and waits up to timeout for
// their first list. Until then (and if that fails) Candidates says it
// does not know, and every namespace is reviewed.
func (x *RBACIndex) Start(ctx context.Context, timeout time.Duration) error {
	x.factory.Start(ctx.Done())
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if !cache.WaitForCacheSync(wctx.Done(), x.bindings.HasSynced) {
		return fmt.Errorf("rbac index: rolebindings not listed within %s (results-api needs list and watch on them cluster-wide)", timeout)
	}
	return nil
}

// Shutdown stops the informers (their context must be cancelled first)
// and waits for them.
func (x *RBACIndex) Shutdown() { x.factory.Shutdown() }

// Candidates returns the sorted namespaces in which a RoleBinding names id
// (its user, a group, its ServiceAccount). ok is false while the informer
// has not listed yet.
func (x *RBACIndex) Candidates(id Identity) (namespaces []string, ok bool) {
	if !x.bindings.HasSynced() {
		return nil, false
	}
	for _, k := range identityKeys(id) {
		objs, _ := x.bindings.GetIndexer().ByIndex(subjectIndex, k)
		for _, o := range objs {
			if rb, isRB := o.(*rbacv1.RoleBinding); isRB {
				namespaces = append(namespaces, rb.Namespace)
			}
		}
	}
	slices.Sort(namespaces)
	return slices.Compact(namespaces), true
}

// identityKeys are the index keys an identity matches.
func identityKeys(id Identity) []string {
	keys := make([]string, 0, 1+len(id.Groups))
	keys = append(keys, "user:"+id.Username)
	for _, g := range id.Groups {
		keys = append(keys, "group:"+g)
	}
	return keys
}

// subjectKeys indexes a RoleBinding by its subjects, as RBAC matches them
// (k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac appliesToUser): a
// ServiceAccount subject without a namespace is in the RoleBinding's own.
func subjectKeys(obj any) ([]string, error) {
	b, ok := obj.(*rbacv1.RoleBinding)
	if !ok {
		return nil, nil
	}
	namespace := b.Namespace
	keys := make([]string, 0, len(b.Subjects))
	for _, s := range b.Subjects {
		switch s.Kind {
		case rbacv1.UserKind:
			keys = append(keys, "user:"+s.Name)
		case rbacv1.GroupKind:
			keys = append(keys, "group:"+s.Name)
		case rbacv1.ServiceAccountKind:
			ns := namespace
			if s.Namespace != "" {
				ns = s.Namespace
			}
			keys = append(keys, "user:"+serviceAccountPrefix+ns+":"+s.Name)
		}
	}
	return keys, nil
}

// trimBinding keeps what the index reads: namespace, name, subjects.
func trimBinding(obj any) (any, error) {
	b, ok := obj.(*rbacv1.RoleBinding)
	if !ok {
		return obj, nil
	}
	m := b.ObjectMeta
	return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace, Name: m.Name, UID: m.UID,
		ResourceVersion: m.ResourceVersion}, Subjects: b.Subjects}, nil
}
