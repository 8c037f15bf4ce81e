package authz

import (
	"errors"
	"maps"
	"slices"
	"strings"

	authv1 "k8s.io/api/authentication/v1"
)

// Authorization errors. The HTTP layer maps ErrForbidden to 403 and
// ErrUnavailable to 503; the wrapping error says why and is safe to log.
var (
	// ErrForbidden is a definite no: the caller may not do this.
	ErrForbidden = errors.New("forbidden")
	// ErrUnavailable means the decision could not be made right now (API
	// server unreachable, timed out, throttling or failing): retry later.
	ErrUnavailable = errors.New("authorization unavailable")
)

// Scope is a write scope of results-api.
type Scope string

// The write scopes (DESIGN.md, "Write scopes").
const (
	// Upload is the scan Pod of a digest storing that digest's report.
	Upload Scope = "upload"
	// Rematch is the matcher replacing an existing report after a DB update.
	Rematch Scope = "rematch"
	// Admin is an operator of Crowsnest creating or deleting any report.
	Admin Scope = "admin"
)

// String returns the scope's name, as used in logs and metrics.
func (s Scope) String() string { return string(s) }

// Admin verbs, checked on the virtual resource reports.crowsnest.dev.
const (
	VerbCreate = "create"
	VerbDelete = "delete"
)

// Keys of the TokenReview user's extra fields that kube-apiserver sets for a
// token bound to a Pod. A token not bound to a Pod has neither.
const (
	ExtraPodName = "authentication.kubernetes.io/pod-name"
	ExtraPodUID  = "authentication.kubernetes.io/pod-uid"
)

const serviceAccountPrefix = "system:serviceaccount:"

// Identity is an authenticated caller: the user a TokenReview returned, or
// the static admin token.
type Identity struct {
	Username string
	UID      string
	Groups   []string
	Extra    map[string][]string
	// Static marks the holder of the static admin token; the other fields
	// are then empty.
	Static bool
}

// FromUserInfo returns the Identity of a TokenReview's status.user.
func FromUserInfo(u authv1.UserInfo) Identity {
	id := Identity{Username: u.Username, UID: u.UID, Groups: slices.Clone(u.Groups)}
	if len(u.Extra) > 0 {
		id.Extra = make(map[string][]string, len(u.Extra))
		for k, v := range u.Extra {
			id.Extra[k] = slices.Clone(v)
		}
	}
	return id
}

// ServiceAccount returns the namespace and name of a service-account
// identity (username system:serviceaccount:<namespace>:<name>).
func (id Identity) ServiceAccount() (namespace, name string, ok bool) {
	rest, ok := strings.CutPrefix(id.Username, serviceAccountPrefix)
	if !ok {
		return "", "", false
	}
	namespace, name, ok = strings.Cut(rest, ":")
	if !ok || namespace == "" || name == "" || strings.Contains(name, ":") {
		return "", "", false
	}
	return namespace, name, true
}

// BoundPod returns the name and UID of the Pod the token is bound to, when
// it is bound to exactly one.
func (id Identity) BoundPod() (name, uid string, ok bool) {
	names, uids := id.Extra[ExtraPodName], id.Extra[ExtraPodUID]
	if len(names) != 1 || len(uids) != 1 || names[0] == "" || uids[0] == "" {
		return "", "", false
	}
	return names[0], uids[0], true
}

// subject names the identity in error messages: never a token.
func (id Identity) subject() string {
	if id.Static {
		return "static admin token"
	}
	if id.Username == "" {
		return "anonymous"
	}
	return id.Username
}

// sortedExtraKeys returns the keys of Extra in a stable order.
func (id Identity) sortedExtraKeys() []string {
	return slices.Sorted(maps.Keys(id.Extra))
}
