package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/authn"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/bomtest"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/service"
)

// authFunc adapts a function to httpapi.Authenticator.
type authFunc func(r *http.Request, token string) error

func (f authFunc) Authenticate(r *http.Request, token string) error { return f(r, token) }

// Each authenticator verdict has one status, code and message: rejected is
// 403, unverifiable 503 (even when the cause is a deadline), and an error
// the authenticator did not classify is a rejected token, never a 500.
func TestAuthenticatorVerdicts(t *testing.T) {
	verdicts := map[string]error{
		"ok":    nil,
		"bad":   fmt.Errorf("%w: system:serviceaccount:ns:sa may not write", authn.ErrBadToken),
		"nokey": authn.ErrNoWriteKey,
		"down":  fmt.Errorf("%w: tokenreview: %w", authn.ErrAuthUnavailable, context.DeadlineExceeded),
		"odd":   errors.New("authenticator failed in an unforeseen way"),
	}
	c := newClient(t, func(cfg *service.Config) {
		cfg.Auth = authFunc(func(_ *http.Request, token string) error { return verdicts[token] })
	})
	const rejected = "the bearer token is not allowed to write"
	for i, tc := range []struct {
		token, code, msg string
		status           int
	}{
		{"bad", "forbidden", rejected, http.StatusForbidden},
		{"nokey", "forbidden", authn.ErrNoWriteKey.Error(), http.StatusForbidden},
		{"down", "auth_unavailable", "the token cannot be verified right now; retry later", http.StatusServiceUnavailable},
		{"odd", "forbidden", rejected, http.StatusForbidden},
	} {
		status, b := c.put(bomtest.Digest(100+i), constructed, "Authorization", "Bearer "+tc.token)
		var e struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		if err := json.Unmarshal(b, &e); err != nil || status != tc.status || e.Error.Code != tc.code || e.Error.Message != tc.msg {
			t.Errorf("token %q: %d %s, want %d %s %q", tc.token, status, b, tc.status, tc.code, tc.msg)
		}
	}
	if status, b := c.put(bomtest.Digest(99), constructed, "Authorization", "Bearer ok"); status != http.StatusCreated {
		t.Errorf("accepted token: %d %s", status, b)
	}
}
