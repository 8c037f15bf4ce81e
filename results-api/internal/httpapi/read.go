package httpapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/crowsnest-dev/crowsnest/results-api/api"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/authn"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/authz"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/hub"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
)

// ReadAuthorizer decides reads (authz.Reader): who asks and what they may
// read. Its errors: authz.ErrNoCredentials and authn.ErrBadToken (401),
// authn.ErrAuthUnavailable (503).
type ReadAuthorizer interface {
	AuthorizeRead(r *http.Request) (authz.Access, error)
}

var (
	errNoCredentials = newError(http.StatusUnauthorized, "unauthorized",
		"a bearer token (Authorization header, or the WebSocket subprotocol "+authz.WebSocketProtocolPrefix+"<base64url token>) is required")
	errInvalidToken = newError(http.StatusUnauthorized, "invalid_token", "the bearer token is invalid, expired or revoked")
)

type accessKey struct{}

// accessOf returns the Access requireReader granted (ok false in open mode).
func accessOf(ctx context.Context) (authz.Access, bool) {
	a, ok := ctx.Value(accessKey{}).(authz.Access)
	return a, ok
}

// requireReader authorizes a read with Config.Reads (open mode without
// one): 401 with WWW-Authenticate without credentials or with a rejected
// token, 503 when they cannot be checked now. A caller limited to
// namespaces reads through a store scope (store.WithScope), so every query
// filters in SQL.
func (s *Server) requireReader(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.Reads == nil {
			next.ServeHTTP(w, r)
			return
		}
		a, err := s.cfg.Reads.AuthorizeRead(r)
		if err != nil {
			s.refuseRead(w, r, err)
			return
		}
		ctx := context.WithValue(r.Context(), accessKey{}, a)
		if !a.Scope.Cluster {
			ctx = store.WithScope(ctx, store.Scope{Namespaces: a.Scope.Namespaces})
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

func (s *Server) refuseRead(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, authz.ErrNoCredentials):
		w.Header().Set("WWW-Authenticate", `Bearer realm="crowsnest-results-api"`)
		writeError(w, r, errNoCredentials)
	case errors.Is(err, authn.ErrAuthUnavailable):
		writeError(w, r, err)
	default:
		w.Header().Set("WWW-Authenticate", `Bearer realm="crowsnest-results-api", error="invalid_token"`)
		writeError(w, r, errInvalidToken)
	}
}

// visibleDigest answers 404 for a digest outside the reader's scope,
// exactly as for one without a report: no existence leak.
func (s *Server) visibleDigest(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, scoped := store.ScopeOf(r.Context()); !scoped {
			next.ServeHTTP(w, r)
			return
		}
		digest, err := digestParam(r)
		if err != nil {
			writeError(w, r, err)
			return
		}
		ok, err := s.cfg.Store.Visible(r.Context(), digest)
		if err != nil {
			writeError(w, r, err)
			return
		}
		if !ok {
			writeError(w, r, store.ErrNotFound)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// getAccess tells the caller who it is and what it may read, so that the
// dashboard can offer its namespaces.
func (s *Server) getAccess(w http.ResponseWriter, r *http.Request) {
	out := api.Access{Cluster: true, Namespaces: []string{}}
	if a, ok := accessOf(r.Context()); ok {
		out.User, out.Cluster = a.User, a.Scope.Cluster
		if !a.Scope.Cluster {
			out.Namespaces = append(out.Namespaces, a.Scope.Namespaces...)
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// DefaultReadRecheck is how often a WebSocket client's access is checked
// again (the read authorization caches answers for about as long).
const DefaultReadRecheck = 30 * time.Second

// hubAccess is what the WebSocket client of r may receive (nil in open
// mode: everything), checked again with r's credentials every readRecheck
// and when its token expires (Config.ReadRecheck).
func (s *Server) hubAccess(r *http.Request) *hub.Access {
	a, ok := accessOf(r.Context())
	if !ok {
		return nil
	}
	var recheck func(ctx context.Context) (*hub.Access, error)
	last := a
	recheck = func(ctx context.Context) (*hub.Access, error) {
		next, err := s.cfg.Reads.AuthorizeRead(r.WithContext(ctx))
		if errors.Is(err, authn.ErrAuthUnavailable) {
			// Not a verdict: keep the client as it is and ask again at
			// the next interval.
			keep := s.toHub(last, recheck)
			keep.Expires = time.Time{}
			return keep, nil
		}
		if err != nil {
			return nil, err
		}
		last = next
		return s.toHub(next, recheck), nil
	}
	return s.toHub(a, recheck)
}

func (s *Server) toHub(a authz.Access, recheck func(ctx context.Context) (*hub.Access, error)) *hub.Access {
	return &hub.Access{All: a.Scope.Cluster, Namespaces: a.Scope.Namespaces, Recheck: recheck, RecheckEvery: s.cfg.ReadRecheck, Expires: a.Expires}
}
