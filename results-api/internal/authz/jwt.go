package authz

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/authn"
)

// MaxTokenBytes bounds the tokens PrecheckJWT decodes. Service-account
// tokens are about 1 KiB; 16 KiB leaves room for generous OIDC claims.
const MaxTokenBytes = 16 << 10

// clockSkew is the leeway on exp and nbf. It matches the leeway
// kube-apiserver allows service-account tokens (one minute), so the
// precheck never refuses a token TokenReview would accept.
const clockSkew = time.Minute

// PrecheckJWT cheaply refuses tokens that TokenReview would refuse anyway,
// before any API call: token must be a compact JWS (three base64url
// segments, a JSON header and a JSON object payload) whose aud claim (a
// string or an array) contains audience, whose exp lies in the future and
// whose nbf, if present, does not; exp and nbf are allowed one minute of
// clock skew.
//
// It does NOT verify the signature: anyone can forge a token that passes.
// Only TokenReview authenticates; the precheck only spares the API server
// garbage, expired and wrong-audience tokens. Errors wrap ErrForbidden and
// never contain the token or its claims.
func PrecheckJWT(token, audience string, now time.Time) error {
	if token == "" {
		return fmt.Errorf("%w: empty token", ErrForbidden)
	}
	if len(token) > MaxTokenBytes {
		return fmt.Errorf("%w: token longer than %d bytes", ErrForbidden, MaxTokenBytes)
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return fmt.Errorf("%w: token is not a JWT (%d segments, want 3)", ErrForbidden, len(parts))
	}
	if parts[2] == "" {
		return fmt.Errorf("%w: token has no signature", ErrForbidden)
	}
	if _, err := base64.RawURLEncoding.DecodeString(parts[2]); err != nil {
		return fmt.Errorf("%w: token signature is not base64url", ErrForbidden)
	}
	var header map[string]any
	if err := decodeSegment(parts[0], &header); err != nil || header == nil {
		return fmt.Errorf("%w: token header is not base64url JSON", ErrForbidden)
	}
	var claims struct {
		Aud json.RawMessage `json:"aud"`
		Exp *json.Number    `json:"exp"`
		Nbf *json.Number    `json:"nbf"`
	}
	if err := decodeSegment(parts[1], &claims); err != nil {
		return fmt.Errorf("%w: token payload is not a base64url JSON object", ErrForbidden)
	}
	if !hasAudience(claims.Aud, audience) {
		return fmt.Errorf("%w: token is not for audience %q", ErrForbidden, audience)
	}
	if claims.Exp == nil {
		return fmt.Errorf("%w: token has no exp", ErrForbidden)
	}
	exp, err := authn.NumericDate(*claims.Exp)
	if err != nil {
		return fmt.Errorf("%w: token exp: %w", ErrForbidden, err)
	}
	if !now.Before(exp.Add(clockSkew)) {
		return fmt.Errorf("%w: token expired", ErrForbidden)
	}
	if claims.Nbf != nil {
		nbf, err := authn.NumericDate(*claims.Nbf)
		if err != nil {
			return fmt.Errorf("%w: token nbf: %w", ErrForbidden, err)
		}
		if now.Add(clockSkew).Before(nbf) {
			return fmt.Errorf("%w: token not valid yet", ErrForbidden)
		}
	}
	return nil
}

// decodeSegment decodes one base64url (unpadded) JSON segment into v.
func decodeSegment(seg string, v any) error {
	raw, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("trailing data")
	}
	return nil
}

// hasAudience reports whether the aud claim, a string or an array of
// strings, contains want.
func hasAudience(raw json.RawMessage, want string) bool {
	if len(raw) == 0 || want == "" {
		return false
	}
	var one string
	if err := json.Unmarshal(raw, &one); err == nil {
		return one == want
	}
	var many []string
	if err := json.Unmarshal(raw, &many); err != nil {
		return false
	}
	for _, a := range many {
		if a == want {
			return true
		}
	}
	return false
}
