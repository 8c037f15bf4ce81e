package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// VEXStatus is an OpenVEX status: what a team decided about a vulnerability.
// +kubebuilder:validation:Enum=not_affected;affected;fixed;under_investigation
type VEXStatus string

// The OpenVEX statuses.
const (
	StatusNotAffected        VEXStatus = "not_affected"
	StatusAffected           VEXStatus = "affected"
	StatusFixed              VEXStatus = "fixed"
	StatusUnderInvestigation VEXStatus = "under_investigation"
)

// VEXJustification is one of OpenVEX's justifications for not_affected.
// +kubebuilder:validation:Enum=component_not_present;vulnerable_code_not_present;vulnerable_code_not_in_execute_path;vulnerable_code_cannot_be_controlled_by_adversary;inline_mitigations_already_exist
type VEXJustification string

// DefaultMaxExceptionLifetime is how long after its creation an exception
// may at most expire (results-api --exception-max-lifetime). The API server
// has no clock in CEL, so results-api, not admission, enforces it.
const DefaultMaxExceptionLifetime = "2160h"

// MaxExceptionVulnerabilities bounds spec.vulnerabilities, and
// MaxExceptionSelectors spec.packages and spec.images.
const (
	MaxExceptionVulnerabilities = 64
	MaxExceptionSelectors       = 64
)

// VulnerabilityExceptionSpec is a triage decision: for these
// vulnerabilities (optionally only in these packages and images), this
// VEX status holds until expiresAt.
//
// +kubebuilder:validation:XValidation:rule="self.status != 'not_affected' || has(self.justification)",message="status not_affected needs a justification (component_not_present, vulnerable_code_not_present, vulnerable_code_not_in_execute_path, vulnerable_code_cannot_be_controlled_by_adversary, inline_mitigations_already_exist)"
// +kubebuilder:validation:XValidation:rule="self.status == 'not_affected' || !has(self.justification)",message="a justification is only for status not_affected"
// +kubebuilder:validation:XValidation:rule="self.status != 'affected' || (has(self.actionStatement) && size(self.actionStatement.trim()) > 0)",message="status affected (an accepted risk) needs an actionStatement: what is done about it, and until when"
// +kubebuilder:validation:XValidation:rule="size(self.statement.trim()) > 0",message="statement (the reason for the decision) must not be blank"
type VulnerabilityExceptionSpec struct {
	// Vulnerabilities are the ids this decision is about (CVE-2024-1234,
	// GHSA-xxxx-xxxx-xxxx, …), as Grype reports them.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=128
	// +kubebuilder:validation:items:Pattern=`^[A-Za-z][A-Za-z0-9]*(-[A-Za-z0-9._:]+)+$`
	// +listType=set
	Vulnerabilities []string `json:"vulnerabilities"`

	// Packages limit the decision to findings whose package URL matches one
	// of these: a whole purl, or a prefix ending in '*' (pkg:npm/lodash@*,
	// pkg:deb/debian/*). Unset: every package.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=512
	// +kubebuilder:validation:items:Pattern=`^pkg:[a-z][a-z0-9.+-]*/[^\s]*$`
	// +listType=set
	// +optional
	Packages []string `json:"packages,omitempty"`

	// Images limit the decision to these image digests (sha256:<64 hex>).
	// Unset: every image (of the exception's namespace, for a namespaced
	// exception).
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:Pattern=`^sha256:[a-f0-9]{64}$`
	// +listType=set
	// +optional
	Images []string `json:"images,omitempty"`

	// Status is the decision, as an OpenVEX status.
	Status VEXStatus `json:"status"`

	// Justification says why a not_affected finding is not exploitable;
	// required for not_affected, refused otherwise.
	// +optional
	Justification VEXJustification `json:"justification,omitempty"`

	// Statement is the reason for the decision, in words (OpenVEX's
	// impact_statement or status_notes). Required.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	Statement string `json:"statement"`

	// ActionStatement says what is done about an affected finding (the
	// accepted risk, the planned fix); required for affected.
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	ActionStatement string `json:"actionStatement,omitempty"`

	// Owner is who answers for the decision (a team, a person).
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Owner string `json:"owner,omitempty"`

	// Ticket links the decision to its tracking issue.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Ticket string `json:"ticket,omitempty"`

	// ExpiresAt is when the decision stops applying. Admission cannot check
	// it against the clock (CEL has none): results-api does not apply an
	// exception whose expiresAt has passed, or lies more than its maximum
	// lifetime (90 days by default) after the exception's creation, and
	// lists it in GET /api/v1/exceptions/audit.
	ExpiresAt metav1.Time `json:"expiresAt"`

	// ExpiredOnFix makes the decision lapse for a finding as soon as a fix
	// version exists for it ("accepted until the fix ships").
	// +optional
	ExpiredOnFix bool `json:"expiredOnFix,omitempty"`
}

// VulnerabilityException records a team's triage decision for findings
// seen in its own namespace. It changes what readers of this namespace see
// (the findings are marked suppressed, not deleted); readers of other
// namespaces running the same image are not affected.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=vex,categories=crowsnest
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 253",message="name must be at most 253 characters"
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.spec.status`
// +kubebuilder:printcolumn:name="Vulnerabilities",type=string,JSONPath=`.spec.vulnerabilities`
// +kubebuilder:printcolumn:name="Expires",type=date,JSONPath=`.spec.expiresAt`
// +kubebuilder:printcolumn:name="Owner",type=string,JSONPath=`.spec.owner`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type VulnerabilityException struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec VulnerabilityExceptionSpec `json:"spec"`
}

// VulnerabilityExceptionList is a list of VulnerabilityExceptions.
//
// +kubebuilder:object:root=true
type VulnerabilityExceptionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []VulnerabilityException `json:"items"`
}

// ClusterVulnerabilityException is a triage decision that applies in every
// namespace: for cluster administrators.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=cvex,categories=crowsnest
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.spec.status`
// +kubebuilder:printcolumn:name="Vulnerabilities",type=string,JSONPath=`.spec.vulnerabilities`
// +kubebuilder:printcolumn:name="Expires",type=date,JSONPath=`.spec.expiresAt`
// +kubebuilder:printcolumn:name="Owner",type=string,JSONPath=`.spec.owner`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterVulnerabilityException struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec VulnerabilityExceptionSpec `json:"spec"`
}

// ClusterVulnerabilityExceptionList is a list of
// ClusterVulnerabilityExceptions.
//
// +kubebuilder:object:root=true
type ClusterVulnerabilityExceptionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterVulnerabilityException `json:"items"`
}
