package v1alpha1

// What Scanners and ClusterScanners share about being reconciled.

// AnnotationRequestedAt on a Scanner or ClusterScanner asks for a
// reconcile without a spec change (any new value will do; a timestamp by
// convention). It is how a Scanner stalled on NamespaceNotPermitted is
// retried.
const AnnotationRequestedAt = "crowsnest.dev/requested-at"

// ReasonReconcileFailed is the Ready reason when a reconcile failed (the
// API server refused a scan Job, say); the message holds the error. It is
// also the Stalled reason when the refusal needs a human (a quota, an
// admission policy, an invalid object), and the Reconciling reason
// otherwise.
const ReasonReconcileFailed = "ReconcileFailed"

// ReasonNamespaceNotPermitted is a Scanner's Ready and Stalled reason when
// the operator may not scan its namespace: it is not in the operator's
// --watch-namespaces, or the API server forbids what a scan needs there.
const ReasonNamespaceNotPermitted = "NamespaceNotPermitted"

// MaxConditionMessage bounds an error quoted in a condition message, in
// bytes (the API server allows 32 KiB; a status should stay small).
const MaxConditionMessage = 1024
