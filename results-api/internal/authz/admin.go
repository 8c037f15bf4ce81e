package authz

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"slices"
	"strconv"

	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The virtual resource admins are authorized on: RBAC rules name it like any
// other (apiGroups: [crowsnest.dev], resources: [reports]); no such API
// exists.
const (
	ReportsGroup    = "crowsnest.dev"
	ReportsResource = "reports"
)

// decision is a SubjectAccessReview's answer.
type decision struct {
	allowed bool
	reason  string // the authorizer's reason or evaluation error, if any
}

// AuthorizeAdmin allows the static admin token, and any other identity that
// a SubjectAccessReview allows to verb (VerbCreate or VerbDelete) the
// virtual resource reports.crowsnest.dev cluster-wide, with the identity's
// user, UID, groups and extra fields.
//
// Decisions, allowed or denied, are cached for Options.AdminCacheTTL per
// (verb, user, UID, groups, extra); concurrent identical checks share one
// SubjectAccessReview. A review that fails or times out is ErrUnavailable
// and is not cached.
func (a *Authorizer) AuthorizeAdmin(ctx context.Context, id Identity, verb string) error {
	if id.Static {
		return nil
	}
	if verb != VerbCreate && verb != VerbDelete {
		return fmt.Errorf("%w: admin verb %q is not create or delete", ErrForbidden, verb)
	}
	if id.Username == "" {
		return fmt.Errorf("%w: anonymous callers hold no admin scope", ErrForbidden)
	}
	// Concurrent identical checks share one review, detached from the
	// first caller's context (one caller giving up must not fail the
	// others) and bounded by Options.Timeout.
	d, err := a.admins.Get(ctx, adminKey(id, verb), "", nil,
		func(ctx context.Context) (decision, error) { return a.review(ctx, id, verb) })
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return fmt.Errorf("%w: subjectaccessreview for %s: %w", ErrUnavailable, id.Username, err)
		}
		return err
	}
	return d.err(id, verb)
}

// review asks the API server whether id may verb reports.crowsnest.dev.
func (a *Authorizer) review(ctx context.Context, id Identity, verb string) (decision, error) {
	sar := subjectAccessReview(id, &authzv1.ResourceAttributes{Verb: verb, Group: ReportsGroup, Resource: ReportsResource})
	res, err := a.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
	if err != nil {
		return decision{}, fmt.Errorf("%w: subjectaccessreview for %s: %w", ErrUnavailable, id.Username, err)
	}
	st := res.Status
	reason := st.Reason
	if reason == "" {
		reason = st.EvaluationError
	}
	return decision{allowed: st.Allowed && !st.Denied, reason: reason}, nil
}

// subjectAccessReview asks whether id (user, UID, groups, extra) may do
// attrs.
func subjectAccessReview(id Identity, attrs *authzv1.ResourceAttributes) *authzv1.SubjectAccessReview {
	sar := &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
		ResourceAttributes: attrs, User: id.Username, UID: id.UID, Groups: slices.Clone(id.Groups),
	}}
	if len(id.Extra) > 0 {
		sar.Spec.Extra = make(map[string]authzv1.ExtraValue, len(id.Extra))
		for k, v := range id.Extra {
			sar.Spec.Extra[k] = slices.Clone(v)
		}
	}
	return sar
}

func (d decision) err(id Identity, verb string) error {
	if d.allowed {
		return nil
	}
	if d.reason != "" {
		return fmt.Errorf("%w: %s may not %s %s.%s: %s", ErrForbidden, id.Username, verb, ReportsResource, ReportsGroup, d.reason)
	}
	return fmt.Errorf("%w: %s may not %s %s.%s", ErrForbidden, id.Username, verb, ReportsResource, ReportsGroup)
}

// adminKey is a digest of everything the review depends on, each field
// length-prefixed so that no two identities share a key.
func adminKey(id Identity, verb string) string {
	h := sha256.New()
	field(h, verb)
	field(h, id.Username)
	field(h, id.UID)
	groups := slices.Clone(id.Groups)
	slices.Sort(groups)
	field(h, strconv.Itoa(len(groups)))
	for _, g := range groups {
		field(h, g)
	}
	keys := id.sortedExtraKeys()
	field(h, strconv.Itoa(len(keys)))
	for _, k := range keys {
		field(h, k)
		field(h, strconv.Itoa(len(id.Extra[k])))
		for _, v := range id.Extra[k] {
			field(h, v)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

func field(h hash.Hash, s string) {
	h.Write([]byte(strconv.Itoa(len(s)) + ":" + s))
}
