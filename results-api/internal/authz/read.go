package authz

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/lru"
)

// VerbList is the read verb, checked on reports.crowsnest.dev cluster-wide
// or per namespace.
const VerbList = "list"

// Defaults of ReadOptions fields left zero.
const (
	DefaultReadCacheSize   = 1024
	DefaultReadCacheTTL    = 30 * time.Second
	DefaultReadConcurrency = 8
)

// ReadScope is what an identity may read: everything (Cluster), or the
// images running in Namespaces (sorted).
type ReadScope struct {
	Cluster    bool
	Namespaces []string
}

// Contains reports whether the scope holds namespace.
func (s ReadScope) Contains(namespace string) bool {
	if s.Cluster {
		return true
	}
	_, ok := slices.BinarySearch(s.Namespaces, namespace)
	return ok
}

// ReadOptions configure a ReadAuthorizer.
type ReadOptions struct {
	// Namespaces lists the namespaces to check one by one when an identity
	// may not list reports cluster-wide: those the inventory knows.
	Namespaces func(ctx context.Context) ([]string, error)
	// Candidates, when set, narrows those namespaces to the ones where
	// the identity could be granted anything (RBACIndex.Candidates: where
	// a RoleBinding names it); ok false (not known yet) reviews them all.
	// Nil reviews every namespace: for authorizers other than RBAC.
	Candidates func(id Identity) (namespaces []string, ok bool)
	// CacheSize and CacheTTL bound the cache of scopes per identity (user,
	// UID, groups, extra) (default DefaultReadCacheSize,
	// DefaultReadCacheTTL). A namespace added to the inventory, or an RBAC
	// change, shows within CacheTTL.
	CacheSize int
	CacheTTL  time.Duration
	// Concurrency bounds the SubjectAccessReviews in flight for one
	// identity's scope (default DefaultReadConcurrency).
	Concurrency int
	// Timeout bounds each SubjectAccessReview (default DefaultTimeout).
	Timeout time.Duration
}

// ReadAuthorizer finds an identity's ReadScope with SubjectAccessReviews
// for VerbList on reports.crowsnest.dev: one cluster-wide, and when that is
// denied one per namespace of ReadOptions.Namespaces (only those of
// ReadOptions.Candidates, when set). It is safe for concurrent use.
type ReadAuthorizer struct {
	client kubernetes.Interface
	o      ReadOptions
	// memo holds the scopes by identity, one review round per identity in
	// flight; each SubjectAccessReview has its own timeout.
	memo *lru.Memo[ReadScope]
}

// NewReadAuthorizer returns a ReadAuthorizer creating SubjectAccessReviews
// through client.
func NewReadAuthorizer(client kubernetes.Interface, o ReadOptions) (*ReadAuthorizer, error) {
	if client == nil || o.Namespaces == nil {
		return nil, fmt.Errorf("authz: read authorizer needs a kubernetes client and a namespace lister")
	}
	o.CacheSize = positive(o.CacheSize, DefaultReadCacheSize)
	o.CacheTTL = positive(o.CacheTTL, DefaultReadCacheTTL)
	o.Concurrency = positive(o.Concurrency, DefaultReadConcurrency)
	o.Timeout = positive(o.Timeout, DefaultTimeout)
	return &ReadAuthorizer{client: client, o: o, memo: lru.NewMemo[ReadScope](o.CacheSize, o.CacheTTL, 0, time.Now)}, nil
}

// Scope returns what id may read. The static admin token reads everything.
// A review that fails is ErrUnavailable and nothing is cached.
func (a *ReadAuthorizer) Scope(ctx context.Context, id Identity) (ReadScope, error) {
	if id.Static {
		return ReadScope{Cluster: true}, nil
	}
	if id.Username == "" {
		return ReadScope{}, nil
	}
	s, err := a.memo.Get(ctx, adminKey(id, VerbList), "", nil,
		func(ctx context.Context) (ReadScope, error) { return a.scope(ctx, id) })
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return ReadScope{}, fmt.Errorf("%w: read scope of %s: %w", ErrUnavailable, id.Username, err)
	}
	return s, err
}

func (a *ReadAuthorizer) scope(ctx context.Context, id Identity) (ReadScope, error) {
	ok, err := a.allowed(ctx, id, "")
	if err != nil || ok {
		return ReadScope{Cluster: ok}, err
	}
	lctx, cancel := context.WithTimeout(ctx, a.o.Timeout)
	namespaces, err := a.o.Namespaces(lctx)
	cancel()
	if err != nil {
		return ReadScope{}, fmt.Errorf("%w: list namespaces: %w", ErrUnavailable, err)
	}
	if a.o.Candidates != nil {
		if candidates, ok := a.o.Candidates(id); ok {
			namespaces = intersectSorted(namespaces, candidates)
		}
	}
	var (
		mu      sync.Mutex
		allowed []string
		first   error
		wg      sync.WaitGroup
		sem     = make(chan struct{}, a.o.Concurrency)
	)
	for _, ns := range namespaces {
		sem <- struct{}{}
		mu.Lock()
		failed := first != nil
		mu.Unlock()
		if failed {
			<-sem
			break
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			ok, err := a.allowed(ctx, id, ns)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil && first == nil:
				first = err
			case ok:
				allowed = append(allowed, ns)
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return ReadScope{}, first
	}
	slices.Sort(allowed)
	return ReadScope{Namespaces: allowed}, nil
}

// allowed asks whether id may list reports.crowsnest.dev in namespace
// ("" for cluster-wide).
func (a *ReadAuthorizer) allowed(ctx context.Context, id Identity, namespace string) (bool, error) {
	sar := subjectAccessReview(id, &authzv1.ResourceAttributes{Namespace: namespace, Verb: VerbList, Group: ReportsGroup, Resource: ReportsResource})
	cctx, cancel := context.WithTimeout(ctx, a.o.Timeout)
	defer cancel()
	res, err := a.client.AuthorizationV1().SubjectAccessReviews().Create(cctx, sar, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("%w: subjectaccessreview list for %s in %q: %w", ErrUnavailable, id.Username, namespace, err)
	}
	return res.Status.Allowed && !res.Status.Denied, nil
}

// intersectSorted returns the elements of namespaces that are in
// candidates (sorted).
func intersectSorted(namespaces, candidates []string) []string {
	out := make([]string, 0, min(len(namespaces), len(candidates)))
	for _, ns := range namespaces {
		if _, ok := slices.BinarySearch(candidates, ns); ok {
			out = append(out, ns)
		}
	}
	return out
}
