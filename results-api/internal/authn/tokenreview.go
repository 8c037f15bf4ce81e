package authn

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	"k8s.io/client-go/rest"
)

// DefaultAudience is the audience scan Jobs request their tokens for.
const DefaultAudience = "crowsnest-results-api"

// Options configure a TokenReviewer.
type Options struct {
	Audience string // default DefaultAudience
	// Allowed lists service accounts as "namespace/name"; name "*" allows
	// every service account of the namespace. Empty allows none.
	Allowed  []string
	Timeout  time.Duration // per TokenReview call (default 5s)
	CacheTTL time.Duration // how long a verdict is reused (default 1m)
}

// TokenReviewer authenticates bearer tokens with TokenReview.
type TokenReviewer struct {
	client authclient.TokenReviewInterface
	o      Options

	mu    sync.Mutex
	cache map[[32]byte]verdict
}

type verdict struct {
	user    authv1.UserInfo
	err     error
	expires time.Time
}

// maxCache bounds the verdict cache; it is cleared when full.
const maxCache = 1024

// New returns a TokenReviewer using cfg to reach the API server.
func New(cfg *rest.Config, o Options) (*TokenReviewer, error) {
	c, err := authclient.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("tokenreview client: %w", err)
	}
	if o.Audience == "" {
		o.Audience = DefaultAudience
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	if o.CacheTTL <= 0 {
		o.CacheTTL = time.Minute
	}
	for _, a := range o.Allowed {
		if ns, name, ok := strings.Cut(a, "/"); !ok || ns == "" || name == "" {
			return nil, fmt.Errorf("allowed service account %q: want namespace/name or namespace/*", a)
		}
	}
	return &TokenReviewer{client: c.TokenReviews(), o: o, cache: map[[32]byte]verdict{}}, nil
}

// Authenticate implements httpapi.Authenticator. A token the API server
// rejects, one for another audience, or one of a service account not on the
// list is ErrBadToken (403); an unreachable API server is
// ErrAuthUnavailable (503, so uploaders retry).
func (t *TokenReviewer) Authenticate(r *http.Request, token string) error {
	user, err := t.Review(r.Context(), token)
	if err != nil {
		return err
	}
	if !t.Allowed(user.Username) {
		return fmt.Errorf("%w: %s may not write", ErrBadToken, user.Username)
	}
	return nil
}

// Review authenticates token with a TokenReview for the audience and
// returns who it belongs to. Definite answers are cached for CacheTTL (by
// the token's hash); an unreachable API server is ErrAuthUnavailable and is
// not cached.
func (t *TokenReviewer) Review(ctx context.Context, token string) (authv1.UserInfo, error) {
	key := sha256.Sum256([]byte(token))
	now := time.Now()
	t.mu.Lock()
	v, ok := t.cache[key]
	t.mu.Unlock()
	if ok && now.Before(v.expires) {
		return v.user, v.err
	}
	ctx, cancel := context.WithTimeout(ctx, t.o.Timeout)
	defer cancel()
	user, err := t.review(ctx, token)
	if errors.Is(err, ErrAuthUnavailable) {
		return user, err // not cached: try again next time
	}
	t.mu.Lock()
	if len(t.cache) >= maxCache {
		clear(t.cache)
	}
	t.cache[key] = verdict{user: user, err: err, expires: now.Add(t.o.CacheTTL)}
	t.mu.Unlock()
	return user, err
}

func (t *TokenReviewer) review(ctx context.Context, token string) (authv1.UserInfo, error) {
	tr, err := t.client.Create(ctx, &authv1.TokenReview{Spec: authv1.TokenReviewSpec{
		Token: token, Audiences: []string{t.o.Audience}}}, metav1.CreateOptions{})
	if err != nil {
		return authv1.UserInfo{}, fmt.Errorf("%w: tokenreview: %w", ErrAuthUnavailable, err)
	}
	st := tr.Status
	if !st.Authenticated || !slices.Contains(st.Audiences, t.o.Audience) {
		return authv1.UserInfo{}, ErrBadToken
	}
	return st.User, nil
}

// Allowed reports whether username is a service account on the Allowed
// list: the namespaces whose scan Pods may upload at all.
func (t *TokenReviewer) Allowed(username string) bool {
	rest, ok := strings.CutPrefix(username, "system:serviceaccount:")
	if !ok {
		return false
	}
	ns, name, ok := strings.Cut(rest, ":")
	if !ok {
		return false
	}
	return slices.Contains(t.o.Allowed, ns+"/"+name) || slices.Contains(t.o.Allowed, ns+"/*")
}
