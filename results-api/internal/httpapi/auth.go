package httpapi

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net/http"
	"strings"
)

// Authentication errors.
var (
	ErrNoToken    = errors.New("no bearer token")
	ErrBadToken   = errors.New("bearer token not allowed")
	ErrNoWriteKey = errors.New("writes are disabled: no write token is configured")
	// ErrAuthUnavailable means the token could not be checked right now
	// (TokenReview unreachable): 503, so that clients retry.
	ErrAuthUnavailable = errors.New("token verification unavailable")
)

// Authenticator decides whether a bearer token may write. It returns nil,
// ErrBadToken, ErrAuthUnavailable (503), or another error (403).
type Authenticator interface {
	Authenticate(r *http.Request, token string) error
}

// StaticToken allows exactly one token, compared in constant time.
type StaticToken struct{ sum [32]byte }

// NewStaticToken returns an authenticator for token (which must not be empty).
func NewStaticToken(token string) (StaticToken, error) {
	token = strings.TrimSpace(token)
	if token == "" {
		return StaticToken{}, errors.New("empty write token")
	}
	return StaticToken{sum: sha256.Sum256([]byte(token))}, nil
}

// Authenticate implements Authenticator.
func (s StaticToken) Authenticate(_ *http.Request, token string) error {
	got := sha256.Sum256([]byte(token))
	if subtle.ConstantTimeCompare(got[:], s.sum[:]) != 1 {
		return ErrBadToken
	}
	return nil
}

// DenyWrites rejects every token: the secure default when none is configured.
type DenyWrites struct{}

// Authenticate implements Authenticator.
func (DenyWrites) Authenticate(*http.Request, string) error { return ErrNoWriteKey }

// requireWriter lets a request through only with an accepted bearer token:
// no token is 401, a rejected one 403.
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
		if err := s.cfg.Auth.Authenticate(r, token); err != nil {
			if errors.Is(err, ErrAuthUnavailable) {
				s.cfg.Logger.Warn("write token not verified", "error", err)
				writeError(w, r, newError(http.StatusServiceUnavailable, "auth_unavailable",
					"the token cannot be verified right now; retry later"))
				return
			}
			msg := errForbidden.msg
			if errors.Is(err, ErrNoWriteKey) {
				msg = err.Error()
			}
			writeError(w, r, newError(http.StatusForbidden, "forbidden", msg))
			return
		}
		next.ServeHTTP(w, r)
	})
}
