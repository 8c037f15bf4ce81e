package authz_test

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/api/scan"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/authz"
)

// jwt assembles a compact JWS from raw JSON; the signature is arbitrary,
// which is the point: the precheck does not verify it.
func jwt(header, payload string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(header)) + "." + enc([]byte(payload)) + "." + enc([]byte("not-a-signature"))
}

func claims(format string, args ...any) string {
	return jwt(`{"alg":"RS256","kid":"k1"}`, fmt.Sprintf(format, args...))
}

func TestPrecheckJWT(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	in10m, ago10m := now.Add(10*time.Minute).Unix(), now.Add(-10*time.Minute).Unix()
	aud := scan.TokenAudience
	enc := base64.RawURLEncoding.EncodeToString
	valid := claims(`{"aud":[%q],"exp":%d,"nbf":%d,"iat":%d,"sub":"system:serviceaccount:ns:crowsnest-scan"}`, aud, in10m, ago10m, ago10m)

	cases := []struct {
		name   string
		token  string
		reason string // empty: accepted; else a substring of the error
	}{
		{"service-account token", valid, ""},
		{"aud as a string", claims(`{"aud":%q,"exp":%d}`, aud, in10m), ""},
		{"aud among others", claims(`{"aud":["https://kubernetes.default.svc",%q],"exp":%d}`, aud, in10m), ""},
		{"fractional exp", claims(`{"aud":%q,"exp":%d.5}`, aud, in10m), ""},
		{"expired within skew", claims(`{"aud":%q,"exp":%d}`, aud, now.Add(-30*time.Second).Unix()), ""},
		{"nbf within skew", claims(`{"aud":%q,"exp":%d,"nbf":%d}`, aud, in10m, now.Add(30*time.Second).Unix()), ""},

		{"empty", "", "empty token"},
		{"garbage", "garbage", "not a JWT (1 segments"},
		{"two segments", strings.Join(strings.Split(valid, ".")[:2], "."), "not a JWT (2 segments"},
		{"four segments", valid + ".x", "not a JWT (4 segments"},
		{"no signature", strings.Join(strings.Split(valid, ".")[:2], ".") + ".", "no signature"},
		{"signature not base64url", strings.Join(strings.Split(valid, ".")[:2], ".") + ".a+b/", "signature is not base64url"},
		{"padded payload", enc([]byte(`{}`)) + "." + base64.URLEncoding.EncodeToString([]byte(`{"aud":"x"}`)) + ".c2ln", "payload is not"},
		{"header not JSON", enc([]byte("nope")) + "." + strings.SplitN(valid, ".", 2)[1], "header is not"},
		{"header JSON null", jwt(`null`, fmt.Sprintf(`{"aud":%q,"exp":%d}`, aud, in10m)), "header is not"},
		{"payload not JSON", jwt(`{"alg":"RS256"}`, `aud=crowsnest`), "payload is not"},
		{"payload an array", jwt(`{"alg":"RS256"}`, `[1,2]`), "payload is not"},
		{"payload trailing data", jwt(`{"alg":"RS256"}`, fmt.Sprintf(`{"aud":%q,"exp":%d}{}`, aud, in10m)), "payload is not"},
		{"wrong audience", claims(`{"aud":["https://kubernetes.default.svc"],"exp":%d}`, in10m), "not for audience"},
		{"audience prefix only", claims(`{"aud":"crowsnest-results","exp":%d}`, in10m), "not for audience"},
		{"no audience", claims(`{"exp":%d}`, in10m), "not for audience"},
		{"aud of another type", claims(`{"aud":42,"exp":%d}`, in10m), "not for audience"},
		{"no exp", claims(`{"aud":%q}`, aud), "no exp"},
		{"exp a string", claims(`{"aud":%q,"exp":"soon"}`, aud), "payload is not"},
		{"exp negative", claims(`{"aud":%q,"exp":-1.5}`, aud), "not a NumericDate"},
		{"expired", claims(`{"aud":%q,"exp":%d}`, aud, ago10m), "expired"},
		{"not valid yet", claims(`{"aud":%q,"exp":%d,"nbf":%d}`, aud, in10m, now.Add(5*time.Minute).Unix()), "not valid yet"},
		{"too long", claims(`{"aud":%q,"exp":%d,"pad":%q}`, aud, in10m, strings.Repeat("x", authz.MaxTokenBytes)), "longer than"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := authz.PrecheckJWT(tc.token, aud, now)
			if tc.reason == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, authz.ErrForbidden) {
				t.Fatalf("got %v, want ErrForbidden", err)
			}
			if !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("error %q does not say %q", err, tc.reason)
			}
			if tc.token != "" && strings.Contains(err.Error(), tc.token) {
				t.Errorf("error contains the token")
			}
		})
	}
}
