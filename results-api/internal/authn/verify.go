package authn

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strings"
	"time"
)

// maxTokenBytes bounds the tokens Verify decodes; service-account tokens
// are about 1 KiB.
const maxTokenBytes = 16 << 10

// clockSkew is the leeway on exp and nbf: kube-apiserver's own for
// service-account tokens, so Verify never refuses a token TokenReview
// would accept.
const clockSkew = time.Minute

// Verify checks token locally: a compact JWS signed RS256 or ES256 by one
// of the issuer's published keys (no other algorithm, never "none"), whose
// iss is the issuer, whose aud contains audience and whose exp and nbf
// hold at now (one minute of skew); audience "" leaves the audience to
// TokenReview (Options.APIServerAudience). A token that fails is ErrBadToken; one
// that cannot be checked right now (keys unreachable, a fetch not due for
// an unknown key id) is ErrAuthUnavailable. Errors never hold the token.
//
// It proves the cluster signed the token, not that the token is still
// good: TokenReview stays the decision (a deleted Pod or ServiceAccount
// revokes its tokens) and says who the token belongs to.
func (k *IssuerKeys) Verify(ctx context.Context, token, audience string, now time.Time) error {
	if len(token) > maxTokenBytes {
		return fmt.Errorf("%w: token longer than %d bytes", ErrBadToken, maxTokenBytes)
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return fmt.Errorf("%w: token is not a JWS", ErrBadToken)
	}
	var header struct {
		Alg, Kid string
	}
	if err := decodeJSON(parts[0], &header); err != nil {
		return fmt.Errorf("%w: token header: %w", ErrBadToken, err)
	}
	if header.Alg != "RS256" && header.Alg != "ES256" {
		return fmt.Errorf("%w: token algorithm %q (want RS256 or ES256)", ErrBadToken, clip(header.Alg))
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return fmt.Errorf("%w: token signature is not base64url", ErrBadToken)
	}
	var c claims
	if err := decodeJSON(parts[1], &c); err != nil {
		return fmt.Errorf("%w: token payload: %w", ErrBadToken, err)
	}
	// Another issuer's token (a person's OIDC token, or a forgery naming
	// one) is refused before it can make the keys be fetched.
	if known := k.Issuer(); known != "" && c.Iss != known {
		return fmt.Errorf("%w: token issuer %q is not the API server's service-account issuer %q", ErrBadToken, clip(c.Iss), known)
	}
	issuer, pub, err := k.key(ctx, header.Kid)
	if err != nil {
		return err
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if !verifySignature(header.Alg, pub, digest[:], sig) {
		return fmt.Errorf("%w: token signature does not verify with the issuer's key %q", ErrBadToken, clip(header.Kid))
	}
	return c.check(issuer, audience, now)
}

// verifySignature checks sig over digest (SHA-256) with pub, for alg.
func verifySignature(alg string, pub crypto.PublicKey, digest, sig []byte) bool {
	switch key := pub.(type) {
	case *rsa.PublicKey:
		return alg == "RS256" && rsa.VerifyPKCS1v15(key, crypto.SHA256, digest, sig) == nil
	case *ecdsa.PublicKey:
		// JWS carries r and s as two 32-byte big-endian halves (RFC 7518).
		if alg != "ES256" || len(sig) != 64 {
			return false
		}
		r, s := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
		return ecdsa.Verify(key, digest, r, s)
	}
	return false
}

// claims are the registered claims Verify checks.
type claims struct {
	Iss string          `json:"iss"`
	Aud json.RawMessage `json:"aud"`
	Exp *json.Number    `json:"exp"`
	Nbf *json.Number    `json:"nbf"`
}

// check holds the claims to issuer, audience and now.
func (c claims) check(issuer, audience string, now time.Time) error {
	if c.Iss != issuer {
		return fmt.Errorf("%w: token issuer %q is not the API server's %q", ErrBadToken, clip(c.Iss), issuer)
	}
	if audience != "" && !hasAudience(c.Aud, audience) {
		return fmt.Errorf("%w: token is not for audience %q", ErrBadToken, audience)
	}
	if c.Exp == nil {
		return fmt.Errorf("%w: token has no exp", ErrBadToken)
	}
	exp, err := NumericDate(*c.Exp)
	if err != nil || !now.Before(exp.Add(clockSkew)) {
		return fmt.Errorf("%w: token expired or its exp is not a date", ErrBadToken)
	}
	if c.Nbf != nil {
		nbf, err := NumericDate(*c.Nbf)
		if err != nil || now.Add(clockSkew).Before(nbf) {
			return fmt.Errorf("%w: token not valid yet or its nbf is not a date", ErrBadToken)
		}
	}
	return nil
}

// decodeJSON decodes one base64url (unpadded) JSON object segment into v.
func decodeJSON(seg string, v any) error {
	raw, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		return fmt.Errorf("not base64url")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil || dec.More() {
		return fmt.Errorf("not one JSON object")
	}
	return nil
}

// hasAudience reports whether the aud claim, a string or an array of
// strings, contains want.
func hasAudience(raw json.RawMessage, want string) bool {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return one == want && want != ""
	}
	var many []string
	return json.Unmarshal(raw, &many) == nil && want != "" && slices.Contains(many, want)
}

// NumericDate converts a JWT NumericDate (seconds since the epoch,
// possibly fractional) to a time.
func NumericDate(n json.Number) (time.Time, error) {
	if i, err := n.Int64(); err == nil {
		return time.Unix(i, 0), nil
	}
	f, err := n.Float64()
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || f > math.MaxInt64/2 {
		return time.Time{}, fmt.Errorf("not a NumericDate")
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)), nil
}
