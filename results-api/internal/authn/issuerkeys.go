package authn

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"
	"golang.org/x/time/rate"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// The API server's service-account issuer discovery (OIDC): its issuer and
// the public keys it signs service-account tokens with. Every
// ServiceAccount may read both by default (ClusterRoleBinding
// system:service-account-issuer-discovery, group system:serviceaccounts).
const (
	DiscoveryPath = "/.well-known/openid-configuration"
	JWKSPath      = "/openid/v1/jwks"
)

// DefaultKeysRefreshInterval is how often, at most, IssuerKeys fetches the
// keys again for a token signed with a key it does not know.
const DefaultKeysRefreshInterval = 10 * time.Second

// minRSABits refuses published RSA keys too small to trust.
const minRSABits = 2048

// IssuerKeys holds the service-account issuer and signing keys of one API
// server and verifies tokens against them locally (Verify), so that only
// tokens the cluster signed cost a TokenReview.
//
// The keys are fetched on first use and again when a token names a key id
// (kid) not among them, at most once per refresh interval whoever asks: a
// flood of tokens with made-up key ids makes one fetch per interval, not
// one per token. A token with an unknown key id is ErrAuthUnavailable (503,
// retry) while a fetch is not due, ErrBadToken once the keys were fetched
// and still lack it.
type IssuerKeys struct {
	client  rest.Interface
	timeout time.Duration
	limiter *rate.Limiter
	flight  singleflight.Group
	fetches atomic.Int64
	mu      sync.RWMutex
	issuer  string
	keys    map[string]crypto.PublicKey
}

// KeyOptions configure IssuerKeys.
type KeyOptions struct {
	// RefreshInterval is the least time between two fetches of the keys
	// (default DefaultKeysRefreshInterval).
	RefreshInterval time.Duration
	// Timeout bounds one fetch, discovery and keys (default 5s).
	Timeout time.Duration
}

// NewIssuerKeys returns IssuerKeys that fetch discovery and keys from the
// API server of cfg, with its credentials. Nothing is fetched yet.
func NewIssuerKeys(cfg *rest.Config, o KeyOptions) (*IssuerKeys, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("issuer keys client: %w", err)
	}
	if o.RefreshInterval <= 0 {
		o.RefreshInterval = DefaultKeysRefreshInterval
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	return &IssuerKeys{client: cs.Discovery().RESTClient(), timeout: o.Timeout,
		limiter: rate.NewLimiter(rate.Every(o.RefreshInterval), 1)}, nil
}

// Fetches returns how many times the keys were fetched (for tests and
// logs).
func (k *IssuerKeys) Fetches() int64 { return k.fetches.Load() }

// Issuer returns the issuer of the last good fetch, "" before one.
func (k *IssuerKeys) Issuer() string {
	k.mu.RLock()
	defer k.mu.RUnlock()
	return k.issuer
}

// key returns the issuer and the key with id kid, fetching the keys when
// kid is unknown and a fetch is due.
func (k *IssuerKeys) key(ctx context.Context, kid string) (string, crypto.PublicKey, error) {
	k.mu.RLock()
	issuer, pub := k.issuer, k.keys[kid]
	k.mu.RUnlock()
	if pub != nil {
		return issuer, pub, nil
	}
	if !k.limiter.Allow() {
		// Someone fetched moments ago (or a flood of unknown key ids
		// is under way): the key may be brand new, so retry later.
		return "", nil, fmt.Errorf("%w: token signed with unknown key %q; issuer keys were fetched recently", ErrAuthUnavailable, clip(kid))
	}
	ch := k.flight.DoChan("fetch", func() (any, error) {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), k.timeout)
		defer cancel()
		return nil, k.fetch(fctx)
	})
	select {
	case res := <-ch:
		if res.Err != nil {
			return "", nil, fmt.Errorf("%w: %w", ErrAuthUnavailable, res.Err)
		}
	case <-ctx.Done():
		return "", nil, fmt.Errorf("%w: %w", ErrAuthUnavailable, ctx.Err())
	}
	k.mu.RLock()
	issuer, pub = k.issuer, k.keys[kid]
	k.mu.RUnlock()
	if pub == nil {
		return "", nil, fmt.Errorf("%w: token signed with key %q, which the API server does not publish", ErrBadToken, clip(kid))
	}
	return issuer, pub, nil
}

// fetch reads discovery and the key set and replaces the held ones.
func (k *IssuerKeys) fetch(ctx context.Context) error {
	k.fetches.Add(1)
	raw, err := k.client.Get().AbsPath(DiscoveryPath).DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("get %s: %w", DiscoveryPath, err)
	}
	var disc struct {
		Issuer string `json:"issuer"`
	}
	if err := json.Unmarshal(raw, &disc); err != nil || disc.Issuer == "" {
		return fmt.Errorf("%s: no issuer in the discovery document", DiscoveryPath)
	}
	// The API server always serves its keys here; the discovery's jwks_uri
	// is the address external verifiers use, often not reachable from
	// inside the cluster.
	raw, err = k.client.Get().AbsPath(JWKSPath).DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("get %s: %w", JWKSPath, err)
	}
	keys, err := parseJWKS(raw)
	if err != nil {
		return fmt.Errorf("%s: %w", JWKSPath, err)
	}
	k.mu.Lock()
	k.issuer, k.keys = disc.Issuer, keys
	k.mu.Unlock()
	return nil
}

// jwk is one JSON Web Key (RFC 7517) of the fields RSA and P-256 keys use.
type jwk struct {
	Kty, Kid, Use, Alg, Crv string
	N, E, X, Y              string
}

// parseJWKS returns the RSA (≥ 2048 bits) and P-256 signing keys of a JWK
// set by key id; other keys are skipped.
func parseJWKS(raw []byte) (map[string]crypto.PublicKey, error) {
	var set struct {
		Keys []jwk `json:"keys"`
	}
	if err := json.Unmarshal(raw, &set); err != nil {
		return nil, fmt.Errorf("not a JWK set: %w", err)
	}
	keys := map[string]crypto.PublicKey{}
	for _, j := range set.Keys {
		if j.Kid == "" || (j.Use != "" && j.Use != "sig") {
			continue
		}
		if pub, err := j.publicKey(); err == nil {
			keys[j.Kid] = pub
		}
	}
	if len(keys) == 0 {
		return nil, errors.New("no RSA or P-256 signing key in the JWK set")
	}
	return keys, nil
}

func (j jwk) publicKey() (crypto.PublicKey, error) {
	b64 := base64.RawURLEncoding.DecodeString
	switch j.Kty {
	case "RSA":
		n, err1 := b64(j.N)
		e, err2 := b64(j.E)
		if err := errors.Join(err1, err2); err != nil || len(e) == 0 || len(e) > 4 {
			return nil, errors.New("bad RSA key")
		}
		pub := &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
		if pub.N.BitLen() < minRSABits || pub.E < 3 || pub.E%2 == 0 {
			return nil, errors.New("weak RSA key")
		}
		return pub, nil
	case "EC":
		x, err1 := b64(j.X)
		y, err2 := b64(j.Y)
		if err := errors.Join(err1, err2); err != nil || j.Crv != "P-256" || len(x) != 32 || len(y) != 32 {
			return nil, errors.New("not a P-256 key")
		}
		return ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, x...), y...))
	}
	return nil, fmt.Errorf("key type %q", j.Kty)
}

// clip shortens attacker-chosen strings before they go into errors.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
