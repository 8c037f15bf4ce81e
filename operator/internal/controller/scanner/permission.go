package scanner

import (
	"context"
	"fmt"
	"slices"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/log"

	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
)

// scanAccess is what a scan needs in the Scanner's namespace beyond reading
// its cache: a 403 on any of these means the namespace is not permitted.
// The operator's Role in each watched namespace grants them (RBAC markers
// on Reconcile).
var scanAccess = []authorizationv1.ResourceAttributes{
	{Verb: "create", Group: "batch", Resource: "jobs"},
	{Verb: "delete", Group: "batch", Resource: "jobs"},
	{Verb: "patch", Group: "batch", Resource: "jobs"},
	{Verb: "list", Group: "batch", Resource: "jobs"},
	{Verb: "list", Resource: "pods"},
}

// watches tells whether the operator may act in namespace ns: every
// namespace when Options.WatchNamespaces is empty. The manager's cache is
// restricted to the same namespaces (CacheOptions), so this only matters
// when the two disagree; it keeps scan Jobs out of any other namespace
// whatever the cache shows.
func (o Options) watches(ns string) bool {
	return len(o.WatchNamespaces) == 0 || slices.Contains(o.WatchNamespaces, ns)
}

// forbidden tells why err, a failed reconcile, means the Scanner's
// namespace is not permitted ("" when it does not): a 403 for which the
// API server confirms that RBAC denies the operator what a scan needs.
func (r *Reconciler) forbidden(ctx context.Context, s *crowsnestv1alpha1.Scanner, err error) (string, error) {
	if !apierrors.IsForbidden(err) {
		return "", nil
	}
	missing, err := r.missingAccess(ctx, s.Namespace)
	if err != nil || len(missing) == 0 {
		return "", err // no missing access: admission (a quota, a policy) refused
	}
	return "the API server forbids the operator to " + strings.Join(missing, ", ") + " there", nil
}

// notPermittedNow records a new NamespaceNotPermitted verdict: no error is
// returned, so no backoff retries it (stalledWhy).
// Its Jobs' finalizers are removed where the operator still may, since no
// reconcile will record those Jobs now.
func (r *Reconciler) notPermittedNow(ctx context.Context, key types.NamespacedName, s *crowsnestv1alpha1.Scanner, why string) {
	r.stall(key, s, why)
	notPermittedTotal.Inc()
	log.FromContext(ctx).Info("namespace not permitted; not retried until the Scanner changes", "why", why)
	if err := r.releaseJobs(ctx, s.Namespace, s.Name); err != nil {
		log.FromContext(ctx).Info("could not release the scan jobs of a namespace not permitted", "error", err.Error())
	}
}

// missingAccess asks the API server (SelfSubjectAccessReview, allowed to
// every authenticated user) which of scanAccess the operator lacks in ns,
// as "create jobs.batch". A 403 is either RBAC or an admission plugin (a
// ResourceQuota answers 403 too); only the first means the namespace is
// not permitted.
func (r *Reconciler) missingAccess(ctx context.Context, ns string) ([]string, error) {
	var missing []string
	for _, a := range scanAccess {
		a.Namespace = ns
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &a}}
		if err := r.Create(ctx, review); err != nil {
			return nil, fmt.Errorf("review access to %s %s in %s: %w", a.Verb, a.Resource, ns, err)
		}
		if !review.Status.Allowed {
			what := a.Resource
			if a.Group != "" {
				what += "." + a.Group
			}
			missing = append(missing, a.Verb+" "+what)
		}
	}
	return missing, nil
}

// notPermitted is a Scanner's NamespaceNotPermitted verdict and the
// generation and requested-at annotation it was reached for.
type notPermitted struct {
	generation  int64
	requestedAt string
	why         string
}

// stalledWhy returns why s was found not permitted, while that verdict
// holds: until the spec or the requested-at annotation changes (or the
// operator restarts, as after a chart upgrade that changes its namespaces).
// Pod and Job events do not retry it, so a namespace that stays forbidden
// costs no API calls.
func (r *Reconciler) stalledWhy(key types.NamespacedName, s *crowsnestv1alpha1.Scanner) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.notPermitted[key]
	if !ok || v.generation != s.Generation || v.requestedAt != s.Annotations[crowsnestv1alpha1.AnnotationRequestedAt] {
		return ""
	}
	return v.why
}

// stall records (why != "") or clears a Scanner's verdict.
func (r *Reconciler) stall(key types.NamespacedName, s *crowsnestv1alpha1.Scanner, why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if why == "" {
		delete(r.notPermitted, key)
		return
	}
	if r.notPermitted == nil {
		r.notPermitted = map[types.NamespacedName]notPermitted{}
	}
	r.notPermitted[key] = notPermitted{generation: s.Generation, requestedAt: s.Annotations[crowsnestv1alpha1.AnnotationRequestedAt], why: why}
}
