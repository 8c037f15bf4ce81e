package authz

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/lru"
)

// Defaults for Options fields left zero.
const (
	DefaultAdminCacheSize = 1024
	DefaultAdminCacheTTL  = 30 * time.Second
	DefaultTimeout        = 5 * time.Second
)

// Options configure an Authorizer.
type Options struct {
	// RematchServiceAccounts lists the service accounts, as
	// "namespace/name", that hold the rematch scope (the matcher's).
	RematchServiceAccounts []string
	// ScanServiceAccount is the name of the service account scan Pods run
	// as (in their own namespace), e.g. "crowsnest-scan"; empty allows any.
	ScanServiceAccount string

	// AdminCacheSize and AdminCacheTTL bound the cache of
	// SubjectAccessReview decisions (default DefaultAdminCacheSize,
	// DefaultAdminCacheTTL).
	AdminCacheSize int
	AdminCacheTTL  time.Duration
	// Timeout bounds each API call: the Pod and Job GETs of an upload and
	// each SubjectAccessReview (default DefaultTimeout).
	Timeout time.Duration
}

// Authorizer decides the write scopes. It is safe for concurrent use.
type Authorizer struct {
	client  kubernetes.Interface
	o       Options
	rematch []string // usernames system:serviceaccount:<ns>:<name>

	admins *lru.Memo[decision]
}

// New returns an Authorizer that reads Pods and Jobs and creates
// SubjectAccessReviews through client.
func New(client kubernetes.Interface, o Options) (*Authorizer, error) {
	if client == nil {
		return nil, errors.New("authz: nil kubernetes client")
	}
	var rematch []string
	for _, sa := range o.RematchServiceAccounts {
		ns, name, ok := strings.Cut(sa, "/")
		if !ok || ns == "" || name == "" || strings.ContainsAny(name, "/:*") || strings.ContainsAny(ns, ":*") {
			return nil, fmt.Errorf("rematch service account %q: want namespace/name", sa)
		}
		rematch = append(rematch, serviceAccountPrefix+ns+":"+name)
	}
	if strings.ContainsAny(o.ScanServiceAccount, "/:*") {
		return nil, fmt.Errorf("scan service account %q: want a bare name", o.ScanServiceAccount)
	}
	for _, sa := range o.RematchServiceAccounts {
		if _, name, _ := strings.Cut(sa, "/"); o.ScanServiceAccount != "" && name == o.ScanServiceAccount {
			return nil, fmt.Errorf("rematch service account %q is the scan service account %q: every scan Pod's token "+
				"would hold the rematch scope and could replace any digest's report; give the matcher its own service account",
				sa, o.ScanServiceAccount)
		}
	}
	o.AdminCacheSize = positive(o.AdminCacheSize, DefaultAdminCacheSize)
	o.AdminCacheTTL = positive(o.AdminCacheTTL, DefaultAdminCacheTTL)
	o.Timeout = positive(o.Timeout, DefaultTimeout)
	return &Authorizer{
		client:  client,
		o:       o,
		rematch: rematch,
		admins:  lru.NewMemo[decision](o.AdminCacheSize, o.AdminCacheTTL, o.Timeout, time.Now),
	}, nil
}

// AuthorizeRematch allows the service accounts listed in
// Options.RematchServiceAccounts. It checks the caller only: the handler must
// also refuse a rematch for a digest that has no stored report yet (a
// rematch replaces a report, it never creates one), which needs the store.
func (a *Authorizer) AuthorizeRematch(id Identity) error {
	if id.Static || id.Username == "" || !slices.Contains(a.rematch, id.Username) {
		return fmt.Errorf("%w: %s does not hold the rematch scope", ErrForbidden, id.subject())
	}
	return nil
}

// CheckUploaders refuses a configuration in which a rematch service account
// could also be a scan Pod's: with no ScanServiceAccount, any service
// account uploadAllowed admits may run scan Pods, so none of those may be a
// rematch account (New already refuses one named like ScanServiceAccount).
func (a *Authorizer) CheckUploaders(uploadAllowed func(username string) bool) error {
	if a.o.ScanServiceAccount != "" || uploadAllowed == nil {
		return nil
	}
	for _, u := range a.rematch {
		if uploadAllowed(u) {
			return fmt.Errorf("rematch service account %s may also upload (allowed service accounts) and no scan service account "+
				"is set: a scan Pod running as it would hold the rematch scope; set the scan service account or keep the "+
				"matcher's namespace out of the allowed service accounts", u)
		}
	}
	return nil
}

// apiError turns a failed API call about what into ErrForbidden when the
// object does not exist and ErrUnavailable otherwise: unreachable, timed
// out, throttled (429), failing (5xx) or refused to results-api itself
// (401/403: its own credentials or RBAC are wrong, which retrying after a
// fix can cure and which says nothing about the caller).
func apiError(what string, err error) error {
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("%w: %s not found", ErrForbidden, what)
	}
	return fmt.Errorf("%w: get %s: %w", ErrUnavailable, what, err)
}

// callContext bounds one API call by Options.Timeout.
func (a *Authorizer) callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, a.o.Timeout)
}

func positive[T int | time.Duration](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}
