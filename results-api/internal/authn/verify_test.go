package authn_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/crowsnest-dev/crowsnest/test/support/kubetest"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/authn"
)

// TestVerifyAgainstTheIssuerKeys checks tokens a real kube-apiserver signed
// against the keys it publishes (OIDC discovery): a fresh token verifies;
// the same signature under a changed payload, a swapped algorithm header,
// another audience, an expired token or another issuer does not. Unknown
// key ids make at most one key fetch per refresh interval.
func TestVerifyAgainstTheIssuerKeys(t *testing.T) {
	cfg := kubetest.StartT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	mint := serviceAccount(ctx, t, cfg, "sa")
	var discovery atomic.Int64
	counted := rest.CopyConfig(cfg)
	counted.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(r *http.Request) (*http.Response, error) {
			if r.URL.Path == authn.DiscoveryPath {
				discovery.Add(1)
			}
			return rt.RoundTrip(r)
		})
	})
	keys, err := authn.NewIssuerKeys(counted, authn.KeyOptions{RefreshInterval: time.Hour})
	must(t, err)
	now := time.Now()
	good := mint(authn.DefaultAudience)
	if err := keys.Verify(ctx, good, authn.DefaultAudience, now); err != nil {
		t.Fatalf("a token the API server signed: %v", err)
	}
	if keys.Issuer() == "" || keys.Fetches() != 1 {
		t.Fatalf("issuer %q after %d fetches", keys.Issuer(), keys.Fetches())
	}

	b64 := base64.RawURLEncoding.EncodeToString
	p := strings.Split(good, ".")
	payload, err := base64.RawURLEncoding.DecodeString(p[1])
	must(t, err)
	for name, tc := range map[string]struct {
		token string
		now   time.Time
	}{
		"payload changed":       {p[0] + "." + b64([]byte(strings.Replace(string(payload), `"default"`, `"kube-system"`, 1))) + "." + p[2], now},
		"alg none":              {swapAlg(t, p, "none"), now},
		"alg HS256":             {swapAlg(t, p, "HS256"), now},
		"the other algorithm":   {swapAlg(t, p, otherAlg(t, p[0])), now},
		"signature cut":         {p[0] + "." + p[1] + "." + p[2][:len(p[2])-8], now},
		"another audience":      {mint("https://kubernetes.default.svc"), now},
		"expired":               {good, now.Add(11 * time.Minute)},
		"another issuer":        {forgeries(t, "https://issuer.example", "made-up", 3)[2], now},
		"not a JWS":             {"garbage", now},
		"two segments":          {p[0] + "." + p[1], now},
		"made-up key, no fetch": {forgeries(t, keys.Issuer(), "made-up", 4)[3], now},
	} {
		err := keys.Verify(ctx, tc.token, authn.DefaultAudience, tc.now)
		if err == nil || (!errors.Is(err, authn.ErrBadToken) && !errors.Is(err, authn.ErrAuthUnavailable)) {
			t.Errorf("%s: %v, want ErrBadToken or ErrAuthUnavailable", name, err)
		}
	}
	if n := keys.Fetches(); n != 1 {
		t.Errorf("%d key fetches, want 1: the refresh interval is an hour", n)
	}
	if n := discovery.Load(); n != 1 {
		t.Errorf("%d discovery GETs, want 1", n)
	}
}

// otherAlg returns ES256 for an RS256 header and RS256 otherwise: the key
// type and the header disagree.
func otherAlg(t *testing.T, header string) string {
	var hdr struct{ Alg string }
	decodeSeg(t, header, &hdr)
	if hdr.Alg == "RS256" {
		return "ES256"
	}
	return "RS256"
}

// swapAlg returns the token of parts with its header's alg replaced.
func swapAlg(t *testing.T, parts []string, alg string) string {
	t.Helper()
	var hdr map[string]any
	decodeSeg(t, parts[0], &hdr)
	hdr["alg"] = alg
	return enc(t, hdr) + "." + parts[1] + "." + parts[2]
}

// enc encodes v as a base64url JSON segment.
func enc(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	must(t, err)
	return base64.RawURLEncoding.EncodeToString(b)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
