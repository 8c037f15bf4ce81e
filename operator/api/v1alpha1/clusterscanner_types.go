package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LabelClusterScanner names, on a Scanner a ClusterScanner generated, the
// ClusterScanner it came from. Its controller owner reference, not this
// label, is what makes a Scanner generated: anyone may set a label.
const LabelClusterScanner = "crowsnest.dev/cluster-scanner"

// DefaultExcludeNamespaces are the namespaces a ClusterScanner whose
// spec.excludeNamespaces is unset never covers, besides the operator's own.
var DefaultExcludeNamespaces = []string{"kube-system", "kube-public", "kube-node-lease"}

// MaxExcludeNamespaces bounds spec.excludeNamespaces.
const MaxExcludeNamespaces = 256

// MaxWorstNamespaces bounds status.worstNamespaces.
const MaxWorstNamespaces = 10

// ClusterScannerSpec says which namespaces a ClusterScanner covers and how
// their images are scanned.
type ClusterScannerSpec struct {
	// NamespaceSelector selects the namespaces covered by their labels;
	// unset or empty selects every namespace.
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, e.operator in ['In', 'NotIn'] ? (has(e.values) && size(e.values) > 0) : (e.operator in ['Exists', 'DoesNotExist'] && (!has(e.values) || size(e.values) == 0)))",message="matchExpressions: operator In and NotIn need values; Exists and DoesNotExist take none; no other operator"
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`

	// ExcludeNamespaces are namespaces never covered, whatever their
	// labels. Unset, it is kube-system, kube-public, kube-node-lease and the
	// operator's own namespace. Set (even to []), the list replaces all of
	// those defaults: list the ones that should stay excluded, and leave the
	// operator's namespace out of it to have it covered.
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +listType=set
	// +optional
	ExcludeNamespaces []string `json:"excludeNamespaces"`

	// ScannerTemplate is the spec of the Scanner generated in each covered
	// namespace (see kubectl explain scanner.spec).
	// +kubebuilder:default={}
	// +optional
	ScannerTemplate ScannerSpec `json:"scannerTemplate,omitempty"`
}

// Condition types of a ClusterScanner besides Ready.
const (
	// ConditionConflicting is True while an older ClusterScanner covers
	// some of this one's namespaces: the older one generates their Scanners.
	ConditionConflicting = "Conflicting"
)

// Condition reasons of a ClusterScanner.
const (
	// ReasonInvalidSelector (Ready=False, Stalled=True):
	// spec.namespaceSelector cannot be evaluated; nothing is generated or
	// removed until it is fixed. A failed API call is Ready=False with the
	// Scanner's ReconcileFailed, retried with backoff.
	ReasonInvalidSelector = "InvalidSelector"
	// ReasonProgressing (Reconciling=True): more Scanners or
	// ServiceAccounts are to be written than one reconcile writes; the next
	// one goes on.
	ReasonProgressing = "Progressing"
	// ReasonCoveredByOlder (Conflicting=True): an older ClusterScanner, or
	// one as old with a smaller name, covers some of the same namespaces.
	ReasonCoveredByOlder = "CoveredByOlder"
	// ReasonNoConflict (Conflicting=False).
	ReasonNoConflict = "NoConflict"
)

// NamespaceScans is how the scans of one namespace are going.
type NamespaceScans struct {
	// Namespace name.
	Namespace string `json:"namespace"`
	// Failed is the number of images whose last scan failed.
	Failed int32 `json:"failed"`
	// Queued is the number of images waiting for a scan Job.
	Queued int32 `json:"queued"`
}

// ClusterScannerStatus is what the operator observed across the covered
// namespaces: counts only, and the few namespaces that need attention.
type ClusterScannerStatus struct {
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready, Conflicting, Reconciling, Stalled.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Namespaces is the number of namespaces covered (overridden ones
	// included, those an older ClusterScanner covers not).
	Namespaces int32 `json:"namespaces"`
	// Overridden is the number of covered namespaces where a Scanner of
	// the namespace's own wins over the generated one.
	Overridden int32 `json:"overridden"`
	// Conflicting is the number of namespaces this ClusterScanner selects
	// that an older ClusterScanner covers.
	// +optional
	Conflicting int32 `json:"conflicting,omitempty"`

	// Images, Scanned, Queued, Scanning and Failed are the sums of the
	// generated Scanners' status counts.
	Images   int32 `json:"images"`
	Scanned  int32 `json:"scanned"`
	Queued   int32 `json:"queued"`
	Scanning int32 `json:"scanning"`
	Failed   int32 `json:"failed"`

	// WorstNamespaces are the generated Scanners' namespaces with the most
	// failed, then queued, images (at most 10; none without either).
	// +kubebuilder:validation:MaxItems=10
	// +listType=atomic
	// +optional
	WorstNamespaces []NamespaceScans `json:"worstNamespaces,omitempty"`
}

// ClusterScanner generates a Scanner, from one template, in every namespace
// it covers; a namespace's own Scanner overrides it there.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=csc,categories=crowsnest
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63",message="name must be at most 63 characters: it names the generated Scanners and labels them"
// +kubebuilder:printcolumn:name="Namespaces",type=integer,JSONPath=`.status.namespaces`
// +kubebuilder:printcolumn:name="Images",type=integer,JSONPath=`.status.images`
// +kubebuilder:printcolumn:name="Scanned",type=integer,JSONPath=`.status.scanned`
// +kubebuilder:printcolumn:name="Failed",type=integer,JSONPath=`.status.failed`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Overridden",type=integer,JSONPath=`.status.overridden`,priority=1
// +kubebuilder:printcolumn:name="Conflicting",type=string,JSONPath=`.status.conditions[?(@.type=="Conflicting")].status`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterScanner struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ClusterScannerSpec   `json:"spec,omitempty"`
	Status ClusterScannerStatus `json:"status,omitempty"`
}

// ClusterScannerList is a list of ClusterScanners.
//
// +kubebuilder:object:root=true
type ClusterScannerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterScanner `json:"items"`
}
