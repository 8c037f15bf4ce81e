package authn

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net/http"
	"strings"
)

// Authentication errors. The HTTP layer maps them to status codes: a
// rejected token is 403, an unverifiable one 503.
var (
	ErrNoToken    = errors.New("no bearer token")
	ErrBadToken   = errors.New("bearer token not allowed")
	ErrNoWriteKey = errors.New("writes are disabled: no write token is configured")
	// ErrAuthUnavailable means the token could not be checked right now
	// (TokenReview unreachable): 503, so that clients retry.
	ErrAuthUnavailable = errors.New("token verification unavailable")
)

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

// Authenticate returns nil for the configured token and ErrBadToken for
// any other.
func (s StaticToken) Authenticate(_ *http.Request, token string) error {
	got := sha256.Sum256([]byte(token))
	if subtle.ConstantTimeCompare(got[:], s.sum[:]) != 1 {
		return ErrBadToken
	}
	return nil
}

// DenyWrites rejects every token: the secure default when none is configured.
type DenyWrites struct{}

// Authenticate always returns ErrNoWriteKey.
func (DenyWrites) Authenticate(*http.Request, string) error { return ErrNoWriteKey }
