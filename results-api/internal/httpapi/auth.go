package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/authn"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/authz"
)

// Authenticator decides whether a bearer token may write. It returns nil,
// authn.ErrBadToken or authn.ErrNoWriteKey (403), authn.ErrAuthUnavailable
// (503), or another error, which is treated as a rejected token (403).
// Package authn holds the implementations.
type Authenticator interface {
	Authenticate(r *http.Request, token string) error
}

// ScopedAuthenticator is an Authenticator that also says which write scope
// an accepted token holds (authz.Gate). A token accepted by an
// Authenticator without it (the static admin token) writes as authz.Admin.
type ScopedAuthenticator interface {
	Authenticator
	AuthenticateScope(r *http.Request, token string) (authz.Scope, error)
}

type scopeKey struct{}

// scopeOf returns the write scope requireWriter accepted the request with.
func scopeOf(r *http.Request) authz.Scope {
	s, _ := r.Context().Value(scopeKey{}).(authz.Scope)
	return s
}

// updateOnly marks a write route that only updates an existing report
// (authz.WithUpdateOnly); it goes before requireWriter.
func updateOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(authz.WithUpdateOnly(r.Context())))
	})
}

// requireWriter lets a request through only with an accepted bearer token:
// no token is 401, a rejected one 403, one that cannot be checked 503. The
// handler finds the token's write scope with scopeOf.
func (s *Server) requireWriter(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := r.Header.Get("Authorization")
		scheme, token, ok := strings.Cut(h, " ")
		token = strings.TrimSpace(token)
		if h == "" || !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="crowsnest-results-api"`)
			writeError(w, r, errUnauthorized)
			return
		}
		// The scope decision needs the digest the write is about.
		r = r.WithContext(authz.WithDigest(r.Context(), chi.URLParam(r, "digest")))
		scope, err := authz.Admin, error(nil)
		if sa, ok := s.cfg.Auth.(ScopedAuthenticator); ok {
			scope, err = sa.AuthenticateScope(r, token)
		} else {
			err = s.cfg.Auth.Authenticate(r, token)
		}
		if err != nil {
			writeError(w, r, authError(err))
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), scopeKey{}, scope)))
	})
}

// authError classifies an authenticator's error for errorFor: an error the
// authenticator did not classify is a rejected token, never a 500.
func authError(err error) error {
	if errors.Is(err, authn.ErrBadToken) || errors.Is(err, authn.ErrNoWriteKey) || errors.Is(err, authn.ErrAuthUnavailable) {
		return err
	}
	return fmt.Errorf("%w: %w", authn.ErrBadToken, err)
}
