// Package authz decides whether an authenticated caller may write to
// results-api, one write scope at a time (see DESIGN.md, "Write scopes"):
//
//   - Upload: only the scan Pod the operator scheduled for a digest may PUT
//     that digest's report. Its projected token must be bound to a Pod (the
//     TokenReview user carries the pod-name and pod-uid extras); that Pod must
//     still exist with the same UID, run as the token's service account, be
//     controlled by a batch/v1 Job labelled as the operator's, annotated with
//     the digest and still running.
//   - Rematch: the matcher's service account(s) may replace a report that
//     already exists (the handler checks existence against the store).
//   - Admin: the static admin token, or anyone a SubjectAccessReview allows
//     to create or delete the virtual resource reports.crowsnest.dev.
//
// Authentication (TokenReview) happens before, in package authn, and turns a
// token into an Identity; PrecheckJWT lets the caller refuse malformed,
// expired or wrong-audience tokens without asking the API server at all.
//
// Every refusal wraps ErrForbidden (HTTP 403, with a reason that is safe to
// log) and every failure to decide wraps ErrUnavailable (HTTP 503, so that
// clients retry). Only definite answers are cached; tokens are never logged,
// returned or used as cache keys.
//
// Reads (Reader, ReadAuthorizer) are SubjectAccessReviews for list on
// reports.crowsnest.dev, cluster-wide and then per namespace; RBACIndex, a
// watch of RoleBindings indexed by subject, narrows the namespaces reviewed
// to those where a RoleBinding names the reader (it never widens a scope).
// Scrapers authorizes /metrics as the operator does: TokenReview, then a
// SubjectAccessReview for get on the non-resource URL /metrics.
//
// The results-api service account needs, cluster-wide: get on pods, get on
// jobs.batch, create on subjectaccessreviews.authorization.k8s.io, list and
// watch on rolebindings.rbac.authorization.k8s.io (RBACIndex), and create
// on tokenreviews.authentication.k8s.io for authn.
package authz
