package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultIgnoreLabel is the label that, set to "true" on a Pod, keeps its
// images out of scanning.
const DefaultIgnoreLabel = "crowsnest.dev/ignore"

// ScannerSpec says how the images running in the Scanner's namespace are
// scanned.
type ScannerSpec struct {
	// Validated at admission so that no tenant can store a Scanner the
	// operator cannot decode (that would break its list of every Scanner).
	// Each CEL rule repeats its field's pattern: the API server runs the rules
	// even when a pattern fails, and duration() of a string Go cannot parse
	// would answer with an evaluation error instead of the rule's message.

	// IgnoreLabel names a Pod label; Pods whose label of that name is "true"
	// are not scanned. It is a label key: an optional DNS-subdomain prefix
	// (at most 253 characters) and '/', then a name of at most 63 characters.
	// +kubebuilder:default="crowsnest.dev/ignore"
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="self.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && (!self.contains('/') || self.indexOf('/') <= 253)",message="ignoreLabel must be a label key: an optional DNS-subdomain prefix (at most 253 characters) and '/', then a name of 1-63 characters [A-Za-z0-9-_.] that starts and ends alphanumeric"
	// +optional
	IgnoreLabel string `json:"ignoreLabel,omitempty"`

	// MaxConcurrentScans caps the scan Jobs of this Scanner that run at once.
	// +kubebuilder:default=2
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=50
	// +optional
	MaxConcurrentScans int32 `json:"maxConcurrentScans,omitempty"`

	// RescanInterval is the age after which a report is refreshed by a new
	// scan: 0s disables rescans, otherwise at least 1h. A Go duration (units
	// h, m, s; no d).
	// +kubebuilder:default="24h"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^[+]?(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$`
	// +kubebuilder:validation:XValidation:rule="self.matches('^[+]?(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$') && (duration(self) == duration('0s') || duration(self) >= duration('1h'))",message="rescanInterval must be 0s (off) or at least 1h; Go duration units: s, m, h (no d)"
	// +optional
	RescanInterval *metav1.Duration `json:"rescanInterval,omitempty"`

	// ScanTimeout bounds one scan Job (its activeDeadlineSeconds): from 1m
	// to 24h. A Go duration (units h, m, s; no d).
	// +kubebuilder:default="10m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^[+]?(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$`
	// +kubebuilder:validation:XValidation:rule="self.matches('^[+]?(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$') && duration(self) >= duration('1m') && duration(self) <= duration('24h')",message="scanTimeout must be between 1m and 24h; Go duration units: s, m, h (no d)"
	// +optional
	ScanTimeout *metav1.Duration `json:"scanTimeout,omitempty"`

	// Resources of the Grype container of each scan Job. Each quantity set
	// here replaces the operator's default for that resource (requests cpu
	// 250m, memory 512Mi, ephemeral-storage sized to the scan's emptyDirs;
	// limits memory 2Gi and ephemeral-storage); the others keep their
	// defaults, and a default request above a limit set here is lowered to it.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// UploaderResources of the uploader container of each scan Job, merged
	// with the defaults the same way as resources (requests cpu 10m, memory
	// 32Mi, ephemeral-storage 16Mi; limits memory 128Mi, ephemeral-storage
	// 64Mi).
	// +optional
	UploaderResources corev1.ResourceRequirements `json:"uploaderResources,omitempty"`

	// GrypeImage overrides the operator's pinned Grype image: an image
	// reference [registry[:port]/]repository[:tag][@sha256:<64 hex>].
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^([A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?(:[0-9]+)?/)?[a-z0-9]+(([._]|__|-+)[a-z0-9]+)*(/[a-z0-9]+(([._]|__|-+)[a-z0-9]+)*)*(:[A-Za-z0-9_][-A-Za-z0-9_.]{0,127})?(@sha256:[a-f0-9]{64})?$`
	// +kubebuilder:validation:XValidation:rule="self.matches('^([A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?(:[0-9]+)?/)?[a-z0-9]+(([._]|__|-+)[a-z0-9]+)*(/[a-z0-9]+(([._]|__|-+)[a-z0-9]+)*)*(:[A-Za-z0-9_][-A-Za-z0-9_.]{0,127})?(@sha256:[a-f0-9]{64})?$')",message="grypeImage must be an image reference [registry[:port]/]repository[:tag][@sha256:<64 hex>]: lower-case repository path, no whitespace"
	// +optional
	GrypeImage string `json:"grypeImage,omitempty"`

	// ScanPod says where this Scanner's scan Pods are scheduled
	// (nodeSelector, tolerations, affinity, priorityClassName). Each field
	// set here replaces the operator's default for that field. One Job
	// scans a digest for the whole cluster: it follows the scanPod of the
	// Scanner that owns it (the one whose reconcile created it).
	// +optional
	ScanPod *ScanPodSpec `json:"scanPod,omitempty"`
}

// Condition types of a Scanner. Ready says whether the Scanner is
// reconciled healthily; ScansComplete and Degraded say how its scans are
// going, so that routine rescans and images that cannot be scanned do not
// make it unready. Reconciling and Stalled follow kstatus: Reconciling while
// a temporary failure is retried, Stalled only when a human must act.
const (
	ConditionReady         = "Ready"
	ConditionScansComplete = "ScansComplete"
	ConditionDegraded      = "Degraded"
	ConditionReconciling   = "Reconciling"
	ConditionStalled       = "Stalled"
)

// Condition reasons of a Scanner.
const (
	// ReasonReconciled (Ready=True): the configuration is valid and
	// results-api and NATS (when configured) answered.
	ReasonReconciled = "Reconciled"
	// ReasonResultsAPIUnavailable (Ready=False, Reconciling=True,
	// ScansComplete=Unknown): results-api did not answer the lookup, so no
	// scan Jobs are created until it does; retried with backoff.
	ReasonResultsAPIUnavailable = "ResultsAPIUnavailable"
	// ReasonEventsUndelivered (Ready=False, Reconciling=True): NATS is
	// unreachable; scanning continues but events are not delivered until it
	// returns.
	ReasonEventsUndelivered = "EventsUndelivered"

	// ReasonUpToDate (ScansComplete=True): no image waits for a scan or is
	// being scanned.
	ReasonUpToDate = "UpToDate"
	// ReasonScanning (ScansComplete=False): scan Jobs are running.
	ReasonScanning = "Scanning"
	// ReasonQueued (ScansComplete=False): images wait for a free slot (or for
	// their finished Job to go) and none is being scanned.
	ReasonQueued = "Queued"

	// ReasonScanFailed (Degraded=True): some images failed to scan and wait
	// for a retry (and others may not be pullable).
	ReasonScanFailed = "ScanFailed"
	// ReasonNotPullable (Degraded=True): every failed image is one that
	// cannot be pulled (FailureNotPullable); retrying will not help.
	ReasonNotPullable = "NotPullable"
	// ReasonNoFailures (Degraded=False): no image failed to scan.
	ReasonNoFailures = "NoFailures"
)

// Failure reasons of a scan, as recorded in status.recentFailures, on Events
// and in job.done events.
const (
	FailureNotPullable      = "NotPullable"           // imageID is a bare local digest; nothing to pull
	FailureImagePull        = "ImagePullFailed"       // Grype could not pull the image (auth, not found)
	FailureScannerImagePull = "ScannerImagePull"      // the Grype or uploader image could not be pulled
	FailureGrype            = "GrypeFailed"           // Grype exited non-zero
	FailureReportInvalid    = "ReportInvalid"         // uploader exit 3
	FailureReportRejected   = "ReportRejected"        // uploader exit 4
	FailureAPIUnreachable   = "ResultsAPIUnreachable" // uploader exit 5
	FailureTokenInvalid     = "UploadTokenInvalid"    // uploader exit 6: projected token missing or empty
	FailureUploader         = "UploaderFailed"        // uploader exited with another code
	FailureOOMKilled        = "OOMKilled"
	FailureDeadlineExceeded = "DeadlineExceeded"
	FailureJob              = "JobFailed"     // the Job failed without a Pod to explain it, or was deleted before it finished
	FailureReportMissing    = "ReportMissing" // the Job succeeded, but results-api has no current report for the digest
	// FailurePodRejected: the Job could not create its Pod; the API server
	// refused it (ResourceQuota, LimitRange, an admission webhook or
	// policy), and the message is the API server's.
	FailurePodRejected = "PodRejected"
	// FailureScanPodConfig: the kubelet could not configure a scan container
	// (CreateContainerConfigError), e.g. an image whose user breaks
	// runAsNonRoot; the message is the kubelet's.
	FailureScanPodConfig = "ScanPodConfigError"
	// FailurePullSecretInvalid: one of the scanned Pods' imagePullSecrets is
	// not a valid Docker config; the scan Pod's docker-config step names it.
	FailurePullSecretInvalid = "PullSecretInvalid"
)

// MaxRecentFailures bounds status.recentFailures.
const MaxRecentFailures = 10

// ScanFailure is one image whose last scan failed.
type ScanFailure struct {
	// Digest of the image, sha256:<hex>.
	Digest string `json:"digest"`
	// Image reference, repository@sha256:<hex>, when known.
	// +optional
	Image string `json:"image,omitempty"`
	// Reason is one of the Failure* reasons.
	Reason string `json:"reason"`
	// Message gives detail (truncated).
	// +optional
	Message string `json:"message,omitempty"`
	// Attempt is the number of the failed attempt.
	// +optional
	Attempt int32 `json:"attempt,omitempty"`
	// NextRetry is when the scan is tried again; absent when it is not.
	// +optional
	NextRetry *metav1.Time `json:"nextRetry,omitempty"`
}

// ScannerStatus is what the operator observed.
type ScannerStatus struct {
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready, ScansComplete, Degraded, Reconciling, Stalled.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Images is the number of distinct image digests running.
	Images int32 `json:"images"`
	// Scanned is the number of those with a fresh report.
	Scanned int32 `json:"scanned"`
	// Queued is the number waiting for a scan Job.
	Queued int32 `json:"queued"`
	// Scanning is the number with a running scan Job.
	Scanning int32 `json:"scanning"`
	// Failed is the number whose last scan failed or that cannot be scanned.
	Failed int32 `json:"failed"`

	// LastScanTime is the newest report time among the running images.
	// +optional
	LastScanTime *metav1.Time `json:"lastScanTime,omitempty"`

	// RecentFailures lists failed images, soonest retry first.
	// +kubebuilder:validation:MaxItems=10
	// +listType=atomic
	// +optional
	RecentFailures []ScanFailure `json:"recentFailures,omitempty"`
}

// Scanner scans the images of the running Pods in its namespace.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=scn,categories=crowsnest
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63",message="name must be at most 63 characters"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Images",type=integer,JSONPath=`.status.images`
// +kubebuilder:printcolumn:name="Scanned",type=integer,JSONPath=`.status.scanned`
// +kubebuilder:printcolumn:name="Scanning",type=integer,JSONPath=`.status.scanning`
// +kubebuilder:printcolumn:name="Failed",type=integer,JSONPath=`.status.failed`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Scans",type=string,JSONPath=`.status.conditions[?(@.type=="ScansComplete")].reason`,priority=1
// +kubebuilder:printcolumn:name="Degraded",type=string,JSONPath=`.status.conditions[?(@.type=="Degraded")].status`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Scanner struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ScannerSpec   `json:"spec,omitempty"`
	Status ScannerStatus `json:"status,omitempty"`
}

// ScannerList is a list of Scanners.
//
// +kubebuilder:object:root=true
type ScannerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Scanner `json:"items"`
}
