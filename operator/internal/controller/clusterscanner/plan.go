package clusterscanner

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
	"github.com/crowsnest-dev/crowsnest/operator/internal/scanjob"
)

// coverage says which namespaces one ClusterScanner covers.
type coverage struct {
	cs       *crowsnestv1alpha1.ClusterScanner
	selector labels.Selector
	exclude  map[string]bool
}

// newCoverage compiles a ClusterScanner's selector and exclusions; an
// invalid selector is an error (the ClusterScanner then covers nothing).
// operatorNS joins the default exclusions when spec.excludeNamespaces is
// unset.
func newCoverage(cs *crowsnestv1alpha1.ClusterScanner, operatorNS string) (coverage, error) {
	sel := labels.Everything()
	if cs.Spec.NamespaceSelector != nil {
		s, err := metav1.LabelSelectorAsSelector(cs.Spec.NamespaceSelector)
		if err != nil {
			return coverage{}, fmt.Errorf("namespaceSelector: %w", err)
		}
		sel = s
	}
	return coverage{cs: cs, selector: sel, exclude: excludedNamespaces(cs.Spec.ExcludeNamespaces, operatorNS)}, nil
}

// excludedNamespaces is spec.excludeNamespaces, or, when it is unset (nil,
// not an empty list), the defaults and the operator's own namespace.
func excludedNamespaces(list []string, operatorNS string) map[string]bool {
	if list == nil {
		list = crowsnestv1alpha1.DefaultExcludeNamespaces
		if operatorNS != "" {
			list = append(slices.Clone(list), operatorNS)
		}
	}
	out := make(map[string]bool, len(list))
	for _, ns := range list {
		out[ns] = true
	}
	return out
}

// covers tells whether ns is covered: selected, not excluded and not being
// deleted (nothing can be created in a terminating namespace).
func (c coverage) covers(ns *corev1.Namespace) bool {
	return ns.DeletionTimestamp.IsZero() && !c.exclude[ns.Name] && c.selector.Matches(labels.Set(ns.Labels))
}

// older orders ClusterScanners for a namespace they both cover: the oldest
// wins, then the smallest name.
func older(a, b *crowsnestv1alpha1.ClusterScanner) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}

// clusterObserved is what one ClusterScanner reconcile read from the cache.
type clusterObserved struct {
	self *crowsnestv1alpha1.ClusterScanner
	// others are the valid coverages of the other ClusterScanners that are
	// not being deleted, oldest first.
	others     []coverage
	namespaces []corev1.Namespace
	// scanners are every Scanner, by namespace.
	scanners map[string][]*crowsnestv1alpha1.Scanner
	// serviceAccounts are the scan ServiceAccounts the operator created
	// (labelled as its own), by namespace.
	serviceAccounts map[string]*corev1.ServiceAccount
	// foreignServiceAccounts are namespaces where a scan ServiceAccount
	// the operator did not create was found lately (the cache does not hold
	// those): it is used as it is.
	foreignServiceAccounts map[string]bool
	// serviceAccount is the scan ServiceAccount's name; empty: none is
	// managed.
	serviceAccount string
	// networkPolicy is the scan NetworkPolicy's spec (nil: none is
	// managed) and networkPolicies the operator's, by namespace.
	networkPolicy   *networkingv1.NetworkPolicySpec
	networkPolicies map[string]*networkingv1.NetworkPolicy
}

// clusterPlan is what a ClusterScanner reconcile writes, and the counts its
// status reports.
type clusterPlan struct {
	createSAs      []string // namespaces
	deleteSAs      []*corev1.ServiceAccount
	createScanners []*crowsnestv1alpha1.Scanner
	updateScanners []scannerUpdate
	deleteScanners []*crowsnestv1alpha1.Scanner
	createNPs      []string // namespaces
	updateNPs      []networkPolicyUpdate
	deleteNPs      []*networkingv1.NetworkPolicy

	covered, overridden, conflicting int
	// olderOwners are the ClusterScanners that cover some of this one's
	// namespaces, sorted.
	olderOwners []string
	// generated are this ClusterScanner's Scanners that stay, as observed.
	generated []*crowsnestv1alpha1.Scanner
}

// scannerUpdate is a generated Scanner as observed (have) and as it should
// be (want: the template's spec and the labels restored).
type scannerUpdate struct{ have, want *crowsnestv1alpha1.Scanner }

// writes is the number of API writes the plan needs.
func (p *clusterPlan) writes() int {
	return len(p.createSAs) + len(p.deleteSAs) + len(p.createScanners) + len(p.updateScanners) + len(p.deleteScanners) +
		len(p.createNPs) + len(p.updateNPs) + len(p.deleteNPs)
}

// planClusterScanner decides, for every namespace, whether self generates
// its Scanner there (covered, not claimed by an older ClusterScanner, no
// Scanner of the namespace's own), keeps the scan ServiceAccount in the
// namespaces it covers (and the scan NetworkPolicy, when configured), and
// removes what it generated elsewhere. It also removes the operator's scan
// ServiceAccounts and NetworkPolicies from namespaces no ClusterScanner
// covers. Pure: the same observation gives the same plan.
func planClusterScanner(obs *clusterObserved, self coverage) *clusterPlan {
	p := &clusterPlan{}
	owners := map[string]bool{}
	for i := range obs.namespaces {
		ns := &obs.namespaces[i]
		ours, foreign := splitScanners(self.cs, obs.scanners[ns.Name])
		claimed, covered := false, self.covers(ns)
		if covered {
			claimed = true
			if o := olderCovering(self.cs, obs.others, ns); o != nil {
				covered = false
				p.conflicting++
				owners[o.Name] = true
			}
		} else {
			claimed = slices.ContainsFunc(obs.others, func(c coverage) bool { return c.covers(ns) })
		}
		keep := covered && !foreign
		for _, s := range ours {
			if keep && s.Name == self.cs.Name {
				p.generated = append(p.generated, s)
				if want := generatedScanner(self.cs, ns.Name); !sameGenerated(s, want) {
					fixed := s.DeepCopy()
					fixed.Spec = want.Spec
					if fixed.Labels == nil {
						fixed.Labels = map[string]string{}
					}
					maps.Copy(fixed.Labels, want.Labels)
					p.updateScanners = append(p.updateScanners, scannerUpdate{have: s, want: fixed})
				}
				continue
			}
			p.deleteScanners = append(p.deleteScanners, s)
		}
		if keep && !slices.ContainsFunc(ours, func(s *crowsnestv1alpha1.Scanner) bool { return s.Name == self.cs.Name }) {
			p.createScanners = append(p.createScanners, generatedScanner(self.cs, ns.Name))
		}
		if covered {
			p.covered++
			if foreign {
				p.overridden++
			}
		}
		planNetworkPolicy(p, obs, ns.Name, covered, claimed, !ns.DeletionTimestamp.IsZero())
		if obs.serviceAccount == "" {
			continue
		}
		sa, managed := obs.serviceAccounts[ns.Name]
		switch {
		case covered && !managed && !obs.foreignServiceAccounts[ns.Name]:
			p.createSAs = append(p.createSAs, ns.Name)
		case !claimed && managed && ns.DeletionTimestamp.IsZero():
			p.deleteSAs = append(p.deleteSAs, sa)
		}
	}
	p.olderOwners = slices.Sorted(maps.Keys(owners))
	return p
}

// splitScanners sorts a namespace's Scanners into those self generated
// (controlled by it) and tells whether one of the namespace's own is there:
// a Scanner that no ClusterScanner controls, or one of self's name that self
// does not control. Scanners other ClusterScanners generated are neither.
func splitScanners(self *crowsnestv1alpha1.ClusterScanner, all []*crowsnestv1alpha1.Scanner) (ours []*crowsnestv1alpha1.Scanner, foreign bool) {
	for _, s := range all {
		ref := generatedBy(s)
		switch {
		case ref != nil && ref.UID == self.UID:
			ours = append(ours, s)
		case ref == nil || s.Name == self.Name:
			foreign = true
		}
	}
	return ours, foreign
}

// olderCovering returns the oldest other ClusterScanner older than self
// that covers ns, or nil.
func olderCovering(self *crowsnestv1alpha1.ClusterScanner, others []coverage, ns *corev1.Namespace) *crowsnestv1alpha1.ClusterScanner {
	for _, c := range others {
		if older(c.cs, self) && c.covers(ns) {
			return c.cs
		}
	}
	return nil
}

// generatedScanner is the Scanner cs generates in namespace ns.
func generatedScanner(cs *crowsnestv1alpha1.ClusterScanner, ns string) *crowsnestv1alpha1.Scanner {
	return &crowsnestv1alpha1.Scanner{
		ObjectMeta: metav1.ObjectMeta{
			Name: cs.Name, Namespace: ns,
			Labels: map[string]string{crowsnestv1alpha1.LabelClusterScanner: cs.Name, scanjob.LabelManagedBy: scanjob.ManagedBy},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: crowsnestv1alpha1.GroupVersion.String(), Kind: "ClusterScanner", Name: cs.Name, UID: cs.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: *cs.Spec.ScannerTemplate.DeepCopy(),
	}
}

// sameGenerated tells whether an existing Scanner already has what the
// ClusterScanner sets: its labels and the template's spec.
func sameGenerated(have, want *crowsnestv1alpha1.Scanner) bool {
	for k, v := range want.Labels {
		if have.Labels[k] != v {
			return false
		}
	}
	return equality.Semantic.DeepEqual(have.Spec, want.Spec)
}

// scanServiceAccount is the scan ServiceAccount the operator creates in a
// covered namespace: no permissions and no API token, labelled as the
// operator's (only such ones are ever deleted) and owned by cs, so that it
// goes with the ClusterScanner.
func scanServiceAccount(cs *crowsnestv1alpha1.ClusterScanner, name, ns string) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: ns,
			Labels: map[string]string{scanjob.LabelManagedBy: scanjob.ManagedBy, crowsnestv1alpha1.LabelClusterScanner: cs.Name},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: crowsnestv1alpha1.GroupVersion.String(), Kind: "ClusterScanner", Name: cs.Name, UID: cs.UID,
			}},
		},
		AutomountServiceAccountToken: ptr.To(false),
	}
}
