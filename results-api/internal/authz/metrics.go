package authz

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"golang.org/x/sync/singleflight"
	authv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/authn"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/lru"
)

// The non-resource URL and verb a scraper must be allowed: the rule of
// ClusterRole <release>-metrics-reader, the same one the operator's
// metrics endpoint checks (kubebuilder's metrics_reader_role.yaml).
const (
	MetricsPath = "/metrics"
	MetricsVerb = "get"
)

// TokenReviewer turns a bearer token into the user it belongs to
// (authn.TokenReviewer).
type TokenReviewer interface {
	Review(ctx context.Context, token string) (authv1.UserInfo, error)
}

// Scrapers decides who may scrape /metrics, as controller-runtime's
// filters.WithAuthenticationAndAuthorization does for the operator: the
// bearer token is reviewed (TokenReview, for the API server's own audiences,
// so Prometheus sends its ServiceAccount's token), then a
// SubjectAccessReview asks whether its user may get the non-resource URL
// /metrics. Neither the static admin token nor proxy headers are believed
// here: scraping is its own permission. Safe for concurrent use.
type Scrapers struct {
	reviewer TokenReviewer
	client   kubernetes.Interface
	timeout  time.Duration
	cache    *lru.Cache[string, decision]
	flight   singleflight.Group
}

// NewScrapers returns Scrapers reviewing tokens with reviewer and creating
// SubjectAccessReviews through client; decisions, allowed or denied, are
// cached per identity for DefaultAdminCacheTTL.
func NewScrapers(reviewer TokenReviewer, client kubernetes.Interface) (*Scrapers, error) {
	if reviewer == nil || client == nil {
		return nil, errors.New("authz: metrics authorization needs a token reviewer and a kubernetes client")
	}
	return &Scrapers{reviewer: reviewer, client: client, timeout: DefaultTimeout,
		cache: lru.New[string, decision](DefaultAdminCacheSize, DefaultAdminCacheTTL, time.Now)}, nil
}

// AuthorizeScrape returns nil when r's bearer token may get /metrics.
// Errors: ErrNoCredentials and authn.ErrBadToken (401), ErrForbidden
// (403), authn.ErrAuthUnavailable (503).
func (s *Scrapers) AuthorizeScrape(r *http.Request) error {
	token := BearerToken(r)
	if token == "" {
		return ErrNoCredentials
	}
	if len(token) > MaxTokenBytes {
		return fmt.Errorf("%w: token longer than %d bytes", authn.ErrBadToken, MaxTokenBytes)
	}
	user, err := s.reviewer.Review(r.Context(), token)
	if err != nil {
		return err
	}
	id := FromUserInfo(user)
	if id.Username == "" {
		return fmt.Errorf("%w: token has no user", authn.ErrBadToken)
	}
	key := adminKey(id, "metrics:"+MetricsVerb+":"+MetricsPath)
	if d, ok := s.cache.Get(key); ok {
		return d.scrapeErr(id)
	}
	ch := s.flight.DoChan(key, func() (any, error) {
		if d, ok := s.cache.Get(key); ok {
			return d, nil
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), s.timeout)
		defer cancel()
		d, err := s.review(ctx, id)
		if err != nil {
			return nil, err
		}
		s.cache.Add(key, d)
		return d, nil
	})
	select {
	case <-r.Context().Done():
		return fmt.Errorf("%w: metrics subjectaccessreview for %s: %w", authn.ErrAuthUnavailable, id.Username, r.Context().Err())
	case res := <-ch:
		if res.Err != nil {
			return res.Err
		}
		return res.Val.(decision).scrapeErr(id)
	}
}

// review asks whether id may get /metrics.
func (s *Scrapers) review(ctx context.Context, id Identity) (decision, error) {
	sar := subjectAccessReview(id, nil)
	sar.Spec.NonResourceAttributes = &authzv1.NonResourceAttributes{Path: MetricsPath, Verb: MetricsVerb}
	res, err := s.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
	if err != nil {
		return decision{}, fmt.Errorf("%w: metrics subjectaccessreview for %s: %w", authn.ErrAuthUnavailable, id.Username, err)
	}
	st := res.Status
	reason := st.Reason
	if reason == "" {
		reason = st.EvaluationError
	}
	return decision{allowed: st.Allowed && !st.Denied, reason: reason}, nil
}

func (d decision) scrapeErr(id Identity) error {
	if d.allowed {
		return nil
	}
	return fmt.Errorf("%w: %s may not %s %s", ErrForbidden, id.Username, MetricsVerb, MetricsPath)
}
