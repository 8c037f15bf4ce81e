package authn

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"golang.org/x/time/rate"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/lru"

	authv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	"k8s.io/client-go/rest"
)

// DefaultAudience is the audience scan Jobs request their tokens for.
const DefaultAudience = "crowsnest-results-api"

// Options configure a TokenReviewer.
type Options struct {
	Audience string // default DefaultAudience, unless APIServerAudience
	// APIServerAudience reviews tokens for the API server's own audiences
	// instead of Audience (TokenReview without spec.audiences), as
	// controller-runtime's metrics filter does: what a scraper such as
	// Prometheus presents is its ServiceAccount's ordinary token. Keys then
	// checks signature, issuer and expiry, and TokenReview the audience.
	APIServerAudience bool
	// Allowed lists service accounts as "namespace/name"; name "*" allows
	// every service account of the namespace, namespace "*" the named
	// service account in every namespace (a ClusterScanner's scan Pods, in
	// namespaces chosen by labels). "*/*" is refused. Empty allows none.
	Allowed  []string
	Timeout  time.Duration // per TokenReview call (default 5s)
	CacheTTL time.Duration // how long a verdict is reused (default 1m)
	// CacheSize bounds the verdict cache (least recently used go first;
	// default 4096).
	CacheSize int
	// FailureRate and FailureBurst bound the TokenReviews that come back
	// unauthenticated (default 5/s, burst 20): past them, a token not in
	// the cache is refused with ErrAuthUnavailable (503, retry) without a
	// call, so a flood of forged tokens costs the API server little.
	FailureRate  float64
	FailureBurst int
	// Keys, when set, verifies each token's signature and claims locally
	// against the API server's service-account issuer keys before any
	// TokenReview: a token the cluster did not sign never reaches the API
	// server, and the failure budget above no longer applies (only tokens
	// the cluster signed are reviewed, so garbage cannot use it up and
	// lock out valid tokens). Nil reviews every well-formed token, within
	// the failure budget.
	Keys *IssuerKeys
	// Now is the clock Keys checks exp and nbf against (default time.Now).
	Now func() time.Time
}

// TokenReviewer authenticates bearer tokens with TokenReview. Verdicts are
// cached by the token's hash in a bounded LRU; concurrent reviews of one
// token share a single call; failed reviews are rate limited.
type TokenReviewer struct {
	client   authclient.TokenReviewInterface
	o        Options
	verdicts *lru.Memo[verdict] // by the token's SHA-256
	failures *rate.Limiter
}

type verdict struct {
	user authv1.UserInfo
	err  error
}

// ErrTooManyFailures is returned, wrapped in ErrAuthUnavailable, while
// failed reviews are over their rate.
var ErrTooManyFailures = errors.New("too many failed token reviews")

// New returns a TokenReviewer using cfg to reach the API server.
func New(cfg *rest.Config, o Options) (*TokenReviewer, error) {
	c, err := authclient.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("tokenreview client: %w", err)
	}
	switch {
	case o.APIServerAudience && o.Audience != "":
		return nil, fmt.Errorf("tokenreview: audience %q and the API server's audiences exclude each other", o.Audience)
	case o.Audience == "" && !o.APIServerAudience:
		o.Audience = DefaultAudience
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	if o.CacheTTL <= 0 {
		o.CacheTTL = time.Minute
	}
	if o.CacheSize <= 0 {
		o.CacheSize = 4096
	}
	if o.FailureRate <= 0 {
		o.FailureRate = 5
	}
	if o.FailureBurst <= 0 {
		o.FailureBurst = 20
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	for _, a := range o.Allowed {
		if ns, name, ok := strings.Cut(a, "/"); !ok || ns == "" || name == "" || (ns == "*" && name == "*") {
			return nil, fmt.Errorf("allowed service account %q: want namespace/name, namespace/* or */name", a)
		}
	}
	return &TokenReviewer{client: c.TokenReviews(), o: o,
		verdicts: lru.NewMemo[verdict](o.CacheSize, o.CacheTTL, o.Timeout, time.Now),
		failures: rate.NewLimiter(rate.Limit(o.FailureRate), o.FailureBurst)}, nil
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
// returns who it belongs to; with Options.Keys, only after the token
// verified locally. Definite answers of TokenReview are cached for
// CacheTTL (by the token's hash); an unreachable API server is
// ErrAuthUnavailable and is not cached.
func (t *TokenReviewer) Review(ctx context.Context, token string) (authv1.UserInfo, error) {
	key := sha256.Sum256([]byte(token))
	if v, ok := t.verdicts.Peek(string(key[:])); ok {
		return v.user, v.err
	}
	if t.o.Keys != nil {
		// Not cached either way: a forged token costs one signature
		// check, and garbage must not evict the verdicts of good tokens.
		if err := t.o.Keys.Verify(ctx, token, t.o.Audience, t.o.Now()); err != nil {
			return authv1.UserInfo{}, err
		}
	}
	// One call per token however many requests carry it, on its own
	// timeout so that one caller giving up does not fail the rest.
	v, err := t.verdicts.Get(ctx, string(key[:]), "", nil, func(ctx context.Context) (verdict, error) {
		budget := t.o.Keys == nil // with Keys, only signed tokens get here
		if budget && t.failures.Tokens() < 1 {
			return verdict{}, fmt.Errorf("%w: %w", ErrAuthUnavailable, ErrTooManyFailures)
		}
		user, err := t.review(ctx, token)
		if errors.Is(err, ErrAuthUnavailable) {
			return verdict{}, err // not cached: try again next time
		}
		if err != nil && budget {
			t.failures.Allow() // spend one failure token
		}
		return verdict{user: user, err: err}, nil
	})
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return authv1.UserInfo{}, fmt.Errorf("%w: %w", ErrAuthUnavailable, err)
		}
		return authv1.UserInfo{}, err
	}
	return v.user, v.err
}

func (t *TokenReviewer) review(ctx context.Context, token string) (authv1.UserInfo, error) {
	spec := authv1.TokenReviewSpec{Token: token}
	if !t.o.APIServerAudience {
		spec.Audiences = []string{t.o.Audience}
	}
	tr, err := t.client.Create(ctx, &authv1.TokenReview{Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		return authv1.UserInfo{}, fmt.Errorf("%w: tokenreview: %w", ErrAuthUnavailable, err)
	}
	st := tr.Status
	// With the API server's audiences, Authenticated is the audience check.
	if !st.Authenticated || (!t.o.APIServerAudience && !slices.Contains(st.Audiences, t.o.Audience)) {
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
	return slices.Contains(t.o.Allowed, ns+"/"+name) || slices.Contains(t.o.Allowed, ns+"/*") || slices.Contains(t.o.Allowed, "*/"+name)
}
