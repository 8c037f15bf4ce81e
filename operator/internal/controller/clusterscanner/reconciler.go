package clusterscanner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
	"github.com/crowsnest-dev/crowsnest/operator/internal/scanjob"
)

// maxClusterWrites bounds the API writes of one ClusterScanner reconcile:
// onboarding 2,000 namespaces is 4,000 creations, which go in batches with
// the status updated in between rather than in one reconcile of minutes.
const maxClusterWrites = 100

// clusterWriteBatchPause is the wait before the next batch of writes.
const clusterWriteBatchPause = 100 * time.Millisecond

// foreignServiceAccountRecheck is how long a scan ServiceAccount the
// operator found but did not create (the chart's, or one made by hand) is
// taken to be there before a reconcile tries to create it again. The cache
// holds only the operator's own ServiceAccounts, so without this every
// reconcile would send a create the API server refuses.
const foreignServiceAccountRecheck = 10 * time.Minute

// Options are the operator-wide settings the ClusterScanner
// controller applies.
type Options struct {
	// ServiceAccount is the scan ServiceAccount (--scan-service-account)
	// kept in every covered namespace; empty keeps none (scan Pods then run
	// as the namespace's default).
	ServiceAccount string
	// OperatorNamespace is the operator's own namespace, excluded unless a
	// ClusterScanner sets spec.excludeNamespaces.
	OperatorNamespace string
	// NetworkPolicy is the scan NetworkPolicy's spec (--scan-network-policy,
	// see LoadScanNetworkPolicy) kept in every covered namespace under the
	// name NetworkPolicyName; nil keeps none.
	NetworkPolicy     *networkingv1.NetworkPolicySpec
	NetworkPolicyName string
}

// Reconciler keeps the Scanners and scan ServiceAccounts
// that ClusterScanners generate. Setup builds it.
type Reconciler struct {
	client.Client
	Recorder events.EventRecorder
	Options  Options
	// Now is the clock; nil is time.Now.
	Now func() time.Time

	mu sync.Mutex
	// foreignSAs: namespace → when a scan ServiceAccount not made by the
	// operator was last found there.
	foreignSAs map[string]time.Time
}

// +kubebuilder:rbac:groups=crowsnest.dev,resources=clusterscanners,verbs=get;list;watch
// +kubebuilder:rbac:groups=crowsnest.dev,resources=clusterscanners/status,verbs=get;patch
// +kubebuilder:rbac:groups=crowsnest.dev,resources=clusterscanners/finalizers,verbs=update
// +kubebuilder:rbac:groups=crowsnest.dev,resources=scanners,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=list;watch
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;update;delete

// Reconcile observes every namespace, Scanner and ClusterScanner, decides
// (planClusterScanner) and writes at most maxClusterWrites objects; the
// status is patched once, in a defer, on every path after the
// ClusterScanner was read. A deleted ClusterScanner needs nothing: the
// garbage collector removes what it generated through owner references.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, retErr error) {
	var cs crowsnestv1alpha1.ClusterScanner
	if err := r.Get(ctx, req.NamespacedName, &cs); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("get clusterscanner: %w", err)
	}
	if !cs.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	before := cs.DeepCopy()
	var out clusterOutcome
	defer func() {
		out.err = retErr
		setClusterScannerStatus(&cs, out)
		if err := r.patchStatus(ctx, before, &cs); err != nil {
			retErr = errors.Join(retErr, err)
		}
	}()

	self, err := newCoverage(&cs, r.Options.OperatorNamespace)
	if err != nil {
		// Only a new spec can fix it, and a new spec is reconciled.
		out.invalid = err
		return ctrl.Result{}, nil
	}
	obs, err := r.observe(ctx, &cs)
	if err != nil {
		return ctrl.Result{}, err
	}
	out.plan = planClusterScanner(obs, self)
	if err := r.act(ctx, &cs, out.plan); err != nil {
		return ctrl.Result{}, err
	}
	if out.plan.writes() > maxClusterWrites {
		out.progressing = true
		return ctrl.Result{RequeueAfter: clusterWriteBatchPause}, nil
	}
	return ctrl.Result{}, nil
}

// observe reads, from the cache, every ClusterScanner, namespace and
// Scanner, and the scan ServiceAccounts the operator created. Namespaces,
// Scanners and ServiceAccounts are the cache's own objects, not copies (a
// reconcile follows every generated Scanner's status change, and thousands
// of copies each time would be garbage): nothing here may modify them; the
// plan copies what it changes.
func (r *Reconciler) observe(ctx context.Context, cs *crowsnestv1alpha1.ClusterScanner) (*clusterObserved, error) {
	var all crowsnestv1alpha1.ClusterScannerList
	if err := r.List(ctx, &all); err != nil {
		return nil, fmt.Errorf("list clusterscanners: %w", err)
	}
	var namespaces corev1.NamespaceList
	if err := r.List(ctx, &namespaces, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list namespaces: %w", err)
	}
	var scanners crowsnestv1alpha1.ScannerList
	if err := r.List(ctx, &scanners, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list scanners: %w", err)
	}
	obs := &clusterObserved{
		self: cs, namespaces: namespaces.Items, serviceAccount: r.Options.ServiceAccount,
		scanners:        make(map[string][]*crowsnestv1alpha1.Scanner, len(namespaces.Items)),
		serviceAccounts: map[string]*corev1.ServiceAccount{}, foreignServiceAccounts: r.recentForeignSAs(),
		networkPolicy: r.Options.NetworkPolicy, networkPolicies: map[string]*networkingv1.NetworkPolicy{},
	}
	slices.SortFunc(obs.namespaces, func(a, b corev1.Namespace) int { return strings.Compare(a.Name, b.Name) })
	for i := range all.Items {
		o := &all.Items[i]
		if o.UID == cs.UID || !o.DeletionTimestamp.IsZero() {
			continue
		}
		// Another ClusterScanner's invalid selector covers nothing; it
		// reports that in its own status.
		if c, err := newCoverage(o, r.Options.OperatorNamespace); err == nil {
			obs.others = append(obs.others, c)
		}
	}
	slices.SortFunc(obs.others, func(a, b coverage) int {
		if older(a.cs, b.cs) {
			return -1
		}
		return 1
	})
	for i := range scanners.Items {
		s := &scanners.Items[i]
		obs.scanners[s.Namespace] = append(obs.scanners[s.Namespace], s)
	}
	if r.Options.ServiceAccount != "" {
		var sas corev1.ServiceAccountList
		if err := r.List(ctx, &sas, client.MatchingLabels{scanjob.LabelManagedBy: scanjob.ManagedBy}, client.UnsafeDisableDeepCopy); err != nil {
			return nil, fmt.Errorf("list service accounts: %w", err)
		}
		for i := range sas.Items {
			if sa := &sas.Items[i]; sa.Name == r.Options.ServiceAccount {
				obs.serviceAccounts[sa.Namespace] = sa
			}
		}
	}
	if r.Options.NetworkPolicy != nil {
		var nps networkingv1.NetworkPolicyList
		if err := r.List(ctx, &nps, client.MatchingLabels{scanjob.LabelManagedBy: scanjob.ManagedBy}, client.UnsafeDisableDeepCopy); err != nil {
			return nil, fmt.Errorf("list network policies: %w", err)
		}
		for i := range nps.Items {
			if np := &nps.Items[i]; np.Name == r.Options.NetworkPolicyName {
				obs.networkPolicies[np.Namespace] = np
			}
		}
	}
	return obs, nil
}

// act writes the plan, at most maxClusterWrites objects, in an order that
// frees before it claims and gives a namespace its ServiceAccount before
// its Scanner. A write that fails does not stop the others (one
// namespace's admission webhook or quota must not hold up the rest); the
// first failure is returned with the count.
func (r *Reconciler) act(ctx context.Context, cs *crowsnestv1alpha1.ClusterScanner, p *clusterPlan) error {
	type write struct {
		kind string // counted in the Event
		do   func() error
	}
	var ws []write
	for _, s := range p.deleteScanners {
		ws = append(ws, write{"deleted Scanners", func() error { return r.deleteExact(ctx, s, s.UID) }})
	}
	for _, sa := range p.deleteSAs {
		ws = append(ws, write{"deleted ServiceAccounts", func() error { return r.deleteExact(ctx, sa, sa.UID) }})
	}
	for _, ns := range p.createSAs {
		ws = append(ws, write{"created ServiceAccounts", func() error {
			err := r.Create(ctx, scanServiceAccount(cs, r.Options.ServiceAccount, ns))
			if apierrors.IsAlreadyExists(err) {
				// One made by the chart or by hand is used as it is.
				r.foundForeignSA(ns)
				return errAlreadyThere
			}
			return err
		}})
	}
	for _, s := range p.createScanners {
		ws = append(ws, write{"created Scanners", func() error {
			// Made a moment ago, and not in the cache yet; or a user's of
			// this name, which the next reconcile sees as overriding.
			err := r.Create(ctx, s)
			if apierrors.IsAlreadyExists(err) {
				return errAlreadyThere
			}
			return err
		}})
	}
	for _, np := range p.deleteNPs {
		ws = append(ws, write{"deleted NetworkPolicies", func() error { return r.deleteExact(ctx, np, np.UID) }})
	}
	for _, ns := range p.createNPs {
		ws = append(ws, write{"created NetworkPolicies", func() error {
			err := r.Create(ctx, scanNetworkPolicy(cs, r.Options.NetworkPolicyName, ns, r.Options.NetworkPolicy))
			if apierrors.IsAlreadyExists(err) {
				// Made a moment ago and not in the cache yet, or a
				// tenant's of this name: theirs is not the operator's to
				// change (the cache holds only labelled ones).
				return errAlreadyThere
			}
			return err
		}})
	}
	for _, u := range p.updateNPs {
		ws = append(ws, write{"updated NetworkPolicies", func() error {
			return client.IgnoreNotFound(r.Update(ctx, u.want))
		}})
	}
	for _, u := range p.updateScanners {
		ws = append(ws, write{"updated Scanners", func() error {
			return client.IgnoreNotFound(r.Patch(ctx, u.want, client.MergeFrom(u.have)))
		}})
	}
	done := map[string]int{}
	var first error
	failed := 0
	for _, w := range ws[:min(len(ws), maxClusterWrites)] {
		switch err := w.do(); {
		case errors.Is(err, errAlreadyThere):
		case err != nil:
			failed++
			first = cmp.Or(first, err)
		default:
			done[w.kind]++
		}
	}
	r.recordWrites(cs, done)
	if failed > 0 {
		return fmt.Errorf("%d of %d writes failed, the first: %w", failed, min(len(ws), maxClusterWrites), first)
	}
	return nil
}

// deleteExact deletes obj unless it was replaced meanwhile (another uid).
func (r *Reconciler) deleteExact(ctx context.Context, obj client.Object, uid types.UID) error {
	return client.IgnoreNotFound(r.Delete(ctx, obj, client.Preconditions{UID: &uid}))
}

// recordWrites records one Event per reconcile that wrote anything.
func (r *Reconciler) recordWrites(cs *crowsnestv1alpha1.ClusterScanner, done map[string]int) {
	if len(done) == 0 || r.Recorder == nil {
		return
	}
	var parts []string
	for _, k := range []string{"created ServiceAccounts", "created Scanners", "updated Scanners", "deleted Scanners", "deleted ServiceAccounts",
		"created NetworkPolicies", "updated NetworkPolicies", "deleted NetworkPolicies"} {
		if n := done[k]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s: %d", k, n))
		}
	}
	r.Recorder.Eventf(cs, nil, corev1.EventTypeNormal, "Generated", "Generate", "%s", strings.Join(parts, ", "))
}

// patchStatus writes cs.Status with a merge patch of the status subresource
// when it differs from before's.
func (r *Reconciler) patchStatus(ctx context.Context, before, cs *crowsnestv1alpha1.ClusterScanner) error {
	if equality.Semantic.DeepEqual(before.Status, cs.Status) {
		return nil
	}
	// The counts are never omitted, but a diff carries only what changed
	// and a new ClusterScanner has none on the server: diff against
	// impossible counts so that every patch carries all of them.
	base := before.DeepCopy()
	st := &base.Status
	st.Namespaces, st.Overridden, st.Images, st.Scanned, st.Queued, st.Scanning, st.Failed = -1, -1, -1, -1, -1, -1, -1
	if err := client.IgnoreNotFound(r.Status().Patch(ctx, cs, client.MergeFrom(base))); err != nil {
		return fmt.Errorf("patch clusterscanner status: %w", err)
	}
	return nil
}

// errAlreadyThere is a creation that found its object there: not written,
// and not a failure.
var errAlreadyThere = errors.New("already there")

// foundForeignSA records a scan ServiceAccount the operator did not create.
func (r *Reconciler) foundForeignSA(ns string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.foreignSAs == nil {
		r.foreignSAs = map[string]time.Time{}
	}
	r.foreignSAs[ns] = r.now()
}

// recentForeignSAs returns the namespaces where a foreign scan
// ServiceAccount was found within foreignServiceAccountRecheck, and forgets
// older findings.
func (r *Reconciler) recentForeignSAs() map[string]bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]bool, len(r.foreignSAs))
	for ns, at := range r.foreignSAs {
		if r.now().Sub(at) < foreignServiceAccountRecheck {
			out[ns] = true
		} else {
			delete(r.foreignSAs, ns)
		}
	}
	return out
}

func (r *Reconciler) now() time.Time {
	if r.Now == nil {
		return time.Now()
	}
	return r.Now()
}
