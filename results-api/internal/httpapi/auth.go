package httpapi

import (
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

// requireWriter lets a request through only with an accepted bearer token:
// no token is 401, a rejected one 403, one that cannot be checked 503.
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
		if err := s.cfg.Auth.Authenticate(r, token); err != nil {
			writeError(w, r, authError(err))
			return
		}
		next.ServeHTTP(w, r)
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
