package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MaxVEXDocumentBytes bounds spec.document: a VEX document of an image's
// publisher or of the security team, small next to etcd's object limit
// (1.5 MiB) and to what results-api holds in memory for every document.
const MaxVEXDocumentBytes = 512 * 1024

// VEXDocumentSpec holds one OpenVEX document, inline. results-api parses
// it and applies its statements to the findings of the images its
// products name, at read time, like exceptions.
//
// +kubebuilder:validation:XValidation:rule="self.document.contains('https://openvex.dev/ns')",message="document must be an OpenVEX document: its @context is https://openvex.dev/ns/v0.2.0 (or another OpenVEX version)"
// +kubebuilder:validation:XValidation:rule="self.document.contains('\"statements\"')",message="document must be an OpenVEX document with statements"
type VEXDocumentSpec struct {
	// Document is the OpenVEX document (JSON, as vexctl and image
	// publishers write it). Its statements' products name images by
	// digest (pkg:oci/<name>@sha256:… or sha256:…) with the affected
	// packages as subcomponents (package URLs), or name packages (package
	// URLs) in any image. Statements with status not_affected or fixed
	// suppress the findings they cover; affected and under_investigation
	// ones annotate them. A document results-api cannot parse applies no
	// statement and is listed as invalid in GET /api/v1/exceptions/audit.
	// +kubebuilder:validation:MinLength=2
	// +kubebuilder:validation:MaxLength=524288
	Document string `json:"document"`

	// Description says where the document comes from (a publisher, a
	// release, a ticket).
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Description string `json:"description,omitempty"`
}

// VEXDocument imports an OpenVEX document for the views of its own
// namespace: readers of other namespaces running the same images are not
// affected.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=vexdoc,categories=crowsnest
// +kubebuilder:printcolumn:name="Description",type=string,JSONPath=`.spec.description`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type VEXDocument struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec VEXDocumentSpec `json:"spec"`
}

// VEXDocumentList is a list of VEXDocuments.
//
// +kubebuilder:object:root=true
type VEXDocumentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []VEXDocument `json:"items"`
}

// ClusterVEXDocument imports an OpenVEX document for every namespace: for
// cluster administrators and the security team.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=cvexdoc,categories=crowsnest
// +kubebuilder:printcolumn:name="Description",type=string,JSONPath=`.spec.description`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterVEXDocument struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec VEXDocumentSpec `json:"spec"`
}

// ClusterVEXDocumentList is a list of ClusterVEXDocuments.
//
// +kubebuilder:object:root=true
type ClusterVEXDocumentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterVEXDocument `json:"items"`
}
