package authz

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	authv1 "k8s.io/api/authentication/v1"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/authn"
)

// Reviewer turns a bearer token into the user it belongs to (TokenReview)
// and says which service accounts may upload at all (authn.TokenReviewer).
type Reviewer interface {
	Review(ctx context.Context, token string) (authv1.UserInfo, error)
	Allowed(username string) bool
}

// Gate decides every write in one place: which scope a token writes with,
// and whether it may. It is the httpapi.Authenticator of results-api.
//
//   - The static admin token (when configured) may PUT and DELETE.
//   - Otherwise, with a Reviewer (TokenReview mode), the token is checked
//     locally (PrecheckJWT) and then reviewed. A DELETE needs admin (SAR
//     delete on reports.crowsnest.dev). A PUT by a rematch service account
//     is a rematch of a report that exists, whether or not its token is
//     bound to a Pod (a kubelet binds every token it mounts); by another
//     token bound to a Pod, an upload (AuthorizeUpload, within the
//     Reviewer's allowed service accounts); by anyone else, admin (SAR
//     create).
//
// AuthenticateScope also says which scope the write goes ahead with.
type Gate struct {
	Static   *authn.StaticToken // nil: no static admin token
	Reviewer Reviewer           // nil: static token only
	Authz    *Authorizer        // required with a Reviewer
	Audience string
	// HasReport tells whether digest has a stored report (rematch may only
	// replace one).
	HasReport func(ctx context.Context, digest string) (bool, error)
	Now       func() time.Time
}

type (
	digestKey     struct{}
	updateOnlyKey struct{}
)

// WithDigest records the digest a write is about in ctx (the HTTP layer
// calls it with the path's digest before Authenticate).
func WithDigest(ctx context.Context, digest string) context.Context {
	return context.WithValue(ctx, digestKey{}, digest)
}

// WithUpdateOnly marks the write in ctx as one that only updates an
// existing report and never creates one (the store answers 404 when there
// is none), such as recording the DB a report was matched against: the
// rematch scope then needs no look-up of the report.
func WithUpdateOnly(ctx context.Context) context.Context {
	return context.WithValue(ctx, updateOnlyKey{}, true)
}

// Authenticate implements httpapi.Authenticator: nil when the write may go
// ahead; authn.ErrBadToken (403) or authn.ErrAuthUnavailable (503) with the
// reason otherwise. The token itself never appears in an error.
func (g *Gate) Authenticate(r *http.Request, token string) error {
	_, err := g.AuthenticateScope(r, token)
	return err
}

// AuthenticateScope is Authenticate that also returns the scope the write
// goes ahead with (Upload, Rematch or Admin; the static token is Admin).
func (g *Gate) AuthenticateScope(r *http.Request, token string) (Scope, error) {
	if g.Static != nil && g.Static.Authenticate(r, token) == nil {
		return Admin, nil
	}
	if g.Reviewer == nil {
		if g.Static == nil {
			return "", authn.ErrNoWriteKey
		}
		return "", authn.ErrBadToken
	}
	ctx := r.Context()
	digest, _ := ctx.Value(digestKey{}).(string)
	now := time.Now
	if g.Now != nil {
		now = g.Now
	}
	if err := PrecheckJWT(token, g.Audience, now()); err != nil {
		return "", g.classify(err)
	}
	user, err := g.Reviewer.Review(ctx, token)
	if err != nil {
		return "", err // already authn's sentinels
	}
	id := FromUserInfo(user)
	switch {
	case r.Method == http.MethodDelete:
		return scoped(Admin, g.classify(g.Authz.AuthorizeAdmin(ctx, id, VerbDelete)))
	case r.Method != http.MethodPut:
		return "", fmt.Errorf("%w: %s is not a write", authn.ErrBadToken, r.Method)
	}
	// The rematch accounts come first: every token a kubelet mounts is
	// bound to its Pod, the matcher's too, so being bound to a Pod does not
	// make a token a scan Pod's. New refuses a scan service account that
	// is also a rematch one, so no scan Pod's token takes this path.
	if g.Authz.AuthorizeRematch(id) == nil {
		return g.rematch(ctx, digest)
	}
	if _, _, bound := id.BoundPod(); bound {
		if !g.Reviewer.Allowed(id.Username) {
			return "", fmt.Errorf("%w: %s is not in a namespace Crowsnest scans", authn.ErrBadToken, id.Username)
		}
		return scoped(Upload, g.classify(g.Authz.AuthorizeUpload(ctx, id, digest)))
	}
	return scoped(Admin, g.classify(g.Authz.AuthorizeAdmin(ctx, id, VerbCreate)))
}

// rematch allows the rematch scope to write digest when the write only
// updates a report (WithUpdateOnly) or digest has a stored report: a
// rematch replaces a report, it never creates one. The store checks again,
// in the write's transaction, that the report exists and that the new BOM
// lists the same components (store.ErrRematchRefused).
func (g *Gate) rematch(ctx context.Context, digest string) (Scope, error) {
	if updateOnly, _ := ctx.Value(updateOnlyKey{}).(bool); updateOnly {
		return Rematch, nil
	}
	ok, err := g.HasReport(ctx, digest)
	if err != nil {
		return "", fmt.Errorf("%w: look up report: %w", authn.ErrAuthUnavailable, err)
	}
	if !ok {
		return "", fmt.Errorf("%w: rematch may only replace an existing report, and %s has none", authn.ErrBadToken, digest)
	}
	return Rematch, nil
}

// Check refuses a Gate whose scopes overlap: a rematch service account
// that scan Pods could run as (Authorizer.CheckUploaders). service.New
// calls it, so a misconfigured binary stops at start-up.
func (g *Gate) Check() error {
	if g.Reviewer == nil || g.Authz == nil {
		return nil
	}
	return g.Authz.CheckUploaders(g.Reviewer.Allowed)
}

// scoped returns scope when err is nil.
func scoped(scope Scope, err error) (Scope, error) {
	if err != nil {
		return "", err
	}
	return scope, nil
}

// classify maps authz's errors onto authn's, which the HTTP layer knows.
func (g *Gate) classify(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrUnavailable):
		return fmt.Errorf("%w: %w", authn.ErrAuthUnavailable, err)
	default:
		return fmt.Errorf("%w: %w", authn.ErrBadToken, err)
	}
}
