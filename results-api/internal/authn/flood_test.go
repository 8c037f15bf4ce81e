package authn_test

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/crowsnest-dev/crowsnest/test/support/kubetest"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/apitest"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/authn"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/authz"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/bomtest"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/service"
)

// TestForgedTokenFloodLocksNobodyOut plays an attacker who reaches
// results-api and floods its write gate with 200 forged service-account
// tokens (right audience, right issuer, an exp an hour ahead): unsigned,
// with a garbage signature, and signed with the attacker's own RSA and
// P-256 keys under the cluster's key id or made-up ones. Then the matcher
// re-matches a report with a freshly minted token.
//
// With local verification (the default) the forged tokens cost no
// TokenReview, few key fetches, and the valid token is accepted. With it
// off, as before it existed, the flood empties the shared TokenReview
// failure budget and the valid token gets 503 auth_unavailable.
func TestForgedTokenFloodLocksNobodyOut(t *testing.T) {
	cfg := kubetest.StartT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	admin := kubernetes.NewForConfigOrDie(cfg)
	matcher := serviceAccount(ctx, t, cfg, "matcher")
	mint := func() string { return matcher(authn.DefaultAudience) }
	// What the attacker learns from any token it holds: issuer and key id.
	var hdr struct{ Kid string }
	var cl struct{ Iss string }
	sample := strings.Split(mint(), ".")
	decodeSeg(t, sample[0], &hdr)
	decodeSeg(t, sample[1], &cl)
	forged := forgeries(t, cl.Iss, hdr.Kid, 200)

	for _, local := range []bool{true, false} {
		t.Run(fmt.Sprintf("local verification %v", local), func(t *testing.T) {
			var reviews, fetches atomic.Int64
			counted := rest.CopyConfig(cfg)
			counted.Wrap(func(rt http.RoundTripper) http.RoundTripper {
				return roundTripper(func(r *http.Request) (*http.Response, error) {
					switch {
					case strings.HasSuffix(r.URL.Path, "/tokenreviews"):
						reviews.Add(1)
					case r.URL.Path == authn.JWKSPath:
						fetches.Add(1)
					}
					return rt.RoundTrip(r)
				})
			})
			o := authn.Options{Audience: authn.DefaultAudience} // the default failure budget: 5/s, burst 20
			if !local {
				// The default budget refills one review every 200 ms: a
				// valid token sent that long after the flood's last refusal
				// would get its review. The lock-out lasts as long as the
				// flood does; a refill too slow to land during the test keeps
				// this check deterministic under load.
				o.FailureRate = 1.0 / 3600
			}
			if local {
				var err error
				if o.Keys, err = authn.NewIssuerKeys(counted, authn.KeyOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			reviewer, err := authn.New(counted, o)
			if err != nil {
				t.Fatal(err)
			}
			az, err := authz.New(admin, authz.Options{RematchServiceAccounts: []string{"default/matcher"}})
			if err != nil {
				t.Fatal(err)
			}
			srv := apitest.Start(t, func(c *service.Config) {
				c.Gate = &authz.Gate{Reviewer: reviewer, Authz: az, Audience: authn.DefaultAudience}
			})
			d := bomtest.Digest(1)
			srv.PutReport(t, d, nil)

			start := time.Now()
			codes := flood(t, srv, d, forged)
			took := time.Since(start)
			t.Logf("flood of %d forged tokens in %v: %v; %d TokenReviews, %d key fetches", len(forged), took.Round(time.Millisecond), codes, reviews.Load(), fetches.Load())
			if codes[http.StatusOK]+codes[http.StatusCreated] > 0 {
				t.Fatalf("a forged token wrote: %v", codes)
			}
			code, body := putStatus(t, srv, d, mint())
			t.Logf("fresh valid token after the flood: %d %s", code, body)
			if !local {
				// The failure this test exists for, kept visible.
				if code != http.StatusServiceUnavailable || !strings.Contains(body, "auth_unavailable") || reviews.Load() == 0 {
					t.Errorf("without local verification: %d %s after %d reviews; the flood no longer locks out valid tokens?", code, body, reviews.Load())
				}
				return
			}
			if code != http.StatusOK {
				t.Errorf("valid token after the flood: %d %s, want 200", code, body)
			}
			if n := reviews.Load(); n != 1 {
				t.Errorf("%d TokenReviews, want 1 (the valid token's only)", n)
			}
			if n, most := fetches.Load(), 2+int64(took/authn.DefaultKeysRefreshInterval); n > most {
				t.Errorf("%d key fetches in %v, want at most %d: made-up key ids drive fetches", n, took, most)
			}
		})
	}
}

// forgeries returns n forged tokens of five kinds, each with the right
// audience and issuer and an exp an hour ahead.
func forgeries(t *testing.T, issuer, kid string, n int) []string {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	enc := base64.RawURLEncoding.EncodeToString
	out := make([]string, n)
	for i := range out {
		claims := enc(fmt.Appendf(nil, `{"iss":%q,"aud":[%q],"exp":%d,"nbf":%d,"sub":"system:serviceaccount:default:matcher","i":%d}`,
			issuer, authn.DefaultAudience, time.Now().Add(time.Hour).Unix(), time.Now().Add(-time.Minute).Unix(), i))
		head := func(alg, kid string) string { return enc(fmt.Appendf(nil, `{"alg":%q,"kid":%q}`, alg, kid)) }
		made := fmt.Sprintf("made-up-%d", i)
		switch i % 5 {
		case 0: // unsigned
			out[i] = head("none", kid) + "." + claims + "."
		case 1: // the cluster's key id, a garbage signature
			out[i] = head("RS256", kid) + "." + claims + "." + enc([]byte("not-a-signature"))
		case 2: // signed by the attacker's RSA key under the cluster's key id
			out[i] = signRSA(t, rsaKey, head("RS256", kid)+"."+claims)
		case 3: // the attacker's RSA key under a made-up key id
			out[i] = signRSA(t, rsaKey, head("RS256", made)+"."+claims)
		case 4: // the attacker's P-256 key under a made-up key id
			in := head("ES256", made) + "." + claims
			h := sha256.Sum256([]byte(in))
			r, s, err := ecdsa.Sign(rand.Reader, ecKey, h[:])
			if err != nil {
				t.Fatal(err)
			}
			out[i] = in + "." + enc(append(r.FillBytes(make([]byte, 32)), s.FillBytes(make([]byte, 32))...))
		}
	}
	return out
}

func signRSA(t *testing.T, key *rsa.PrivateKey, in string) string {
	h := sha256.Sum256([]byte(in))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, h[:])
	if err != nil {
		t.Fatal(err)
	}
	return in + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// flood sends one rematch PUT per token, 8 at a time, and counts the
// status codes.
func flood(t *testing.T, srv *apitest.Server, digest string, tokens []string) map[int]int {
	codes := map[int]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	next := make(chan string)
	for range 8 {
		wg.Go(func() {
			for tok := range next {
				code, _ := putStatus(t, srv, digest, tok)
				mu.Lock()
				codes[code]++
				mu.Unlock()
			}
		})
	}
	for _, tok := range tokens {
		next <- tok
	}
	close(next)
	wg.Wait()
	return codes
}

func putStatus(t *testing.T, srv *apitest.Server, digest, token string) (int, string) {
	req, err := http.NewRequest(http.MethodPut, srv.URL+"/api/v1/reports/"+digest, bytes.NewReader(apitest.SmallBOM(digest)))
	if err != nil {
		t.Error(err)
		return 0, ""
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/vnd.cyclonedx+json")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Error(err)
		return 0, ""
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

func decodeSeg(t *testing.T, seg string, v any) {
	raw, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatal(err)
	}
}
