package authn_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/crowsnest-dev/crowsnest/test/support/kubetest"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/authn"
)

// TestTokenReviewsAreBounded counts the TokenReview calls a real
// kube-apiserver receives: 32 concurrent requests with one token make one
// call; forged tokens past the failure budget make none (503, retryable),
// while a token already reviewed keeps working.
func TestTokenReviewsAreBounded(t *testing.T) {
	cfg := kubetest.StartT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	good := serviceAccount(ctx, t, cfg, "scan")(authn.DefaultAudience)

	var calls atomic.Int64
	counted := rest.CopyConfig(cfg)
	counted.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(r *http.Request) (*http.Response, error) {
			if strings.HasSuffix(r.URL.Path, "/tokenreviews") {
				calls.Add(1)
			}
			return rt.RoundTrip(r)
		})
	})
	reviewer, err := authn.New(counted, authn.Options{Allowed: []string{"default/scan"}, FailureRate: 0.001, FailureBurst: 2})
	if err != nil {
		t.Fatal(err)
	}

	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := reviewer.Review(ctx, good)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("good token: %v", err)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("32 concurrent reviews of one token made %d TokenReview calls, want 1", n)
	}

	// Forged tokens (well-formed, unknown signer): two reviews fail and use
	// up the failure budget; the next forged token is refused without a call.
	exp := time.Now().Add(time.Hour)
	first := forged(0, exp)
	for i := range 2 {
		if _, err := reviewer.Review(ctx, forged(i, exp)); !errors.Is(err, authn.ErrBadToken) {
			t.Fatalf("forged token %d: %v, want ErrBadToken", i, err)
		}
	}
	before := calls.Load()
	_, err = reviewer.Review(ctx, forged(99, exp))
	if !errors.Is(err, authn.ErrAuthUnavailable) || !errors.Is(err, authn.ErrTooManyFailures) {
		t.Fatalf("forged token past the budget: %v, want ErrAuthUnavailable/ErrTooManyFailures", err)
	}
	if calls.Load() != before {
		t.Fatal("a forged token past the failure budget still reached the API server")
	}
	// A repeated forged token is answered from the cache: no call, still 403.
	if _, err := reviewer.Review(ctx, first); !errors.Is(err, authn.ErrBadToken) || calls.Load() != before {
		t.Fatalf("cached forged token: %v (calls %d → %d)", err, before, calls.Load())
	}
	if _, err := reviewer.Review(ctx, good); err != nil {
		t.Fatalf("the reviewed good token during a flood: %v", err)
	}
}

// forged returns a JWT-shaped token no API server signed.
func forged(i int, exp time.Time) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"RS256"}`)) + "." +
		enc([]byte(fmt.Sprintf(`{"aud":["%s"],"exp":%d,"sub":"x%d"}`, authn.DefaultAudience, exp.Unix(), i))) + "." +
		enc([]byte("not-a-signature"))
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
