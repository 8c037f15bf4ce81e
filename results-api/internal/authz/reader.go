package authz

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/authn"
)

// ErrNoCredentials: a read came with neither a bearer token nor identity
// headers from the trusted proxy (401).
var ErrNoCredentials = errors.New("no credentials")

// WebSocketProtocolPrefix is the Sec-WebSocket-Protocol form of a bearer
// token that Kubernetes uses (browsers cannot set headers on a WebSocket):
// "base64url.bearer.authorization.k8s.io." + the token, base64url without
// padding.
const WebSocketProtocolPrefix = "base64url.bearer.authorization.k8s.io."

// Access is an authenticated reader and what it may read.
type Access struct {
	User  string
	Scope ReadScope
	// Expires is when the credential stops being valid, as far as the
	// token says (zero: unknown, e.g. proxy headers): a WebSocket checks
	// it again then.
	Expires time.Time
}

// Proxy trusts identity headers set by an authenticating proxy, but only
// on connections from its addresses.
type Proxy struct {
	UserHeader   string // e.g. X-Remote-User
	GroupsHeader string // e.g. X-Remote-Group; values comma-separated or repeated
	Trusted      []netip.Prefix
}

// Reader decides reads (--read-auth=kubernetes): who is asking (identity
// headers from the trusted proxy, else a bearer token: the static admin
// token or a TokenReview) and what they may read (ReadAuthorizer). The
// static admin token and the rematch service accounts read everything.
type Reader struct {
	Static   *authn.StaticToken
	Reviewer Reviewer // TokenReview for Audience
	Audience string
	// Writers, when set, says which identities hold the rematch scope.
	Writers *Authorizer
	Scopes  *ReadAuthorizer
	Proxy   *Proxy // nil: no authenticating proxy
	Now     func() time.Time
}

// AuthorizeRead authenticates r and returns its Access. Errors:
// ErrNoCredentials (401), authn.ErrBadToken (401: forged, expired or
// revoked), authn.ErrAuthUnavailable (503).
func (rd *Reader) AuthorizeRead(r *http.Request) (Access, error) {
	if id, ok := rd.proxied(r); ok {
		return rd.access(r.Context(), id, time.Time{})
	}
	token := BearerToken(r)
	if token == "" {
		return Access{}, ErrNoCredentials
	}
	if rd.Static != nil && rd.Static.Authenticate(r, token) == nil {
		return Access{User: "static admin token", Scope: ReadScope{Cluster: true}}, nil
	}
	if rd.Reviewer == nil {
		return Access{}, authn.ErrBadToken
	}
	now := time.Now
	if rd.Now != nil {
		now = rd.Now
	}
	if err := PrecheckJWT(token, rd.Audience, now()); err != nil {
		return Access{}, fmt.Errorf("%w: %w", authn.ErrBadToken, err)
	}
	user, err := rd.Reviewer.Review(r.Context(), token)
	if err != nil {
		return Access{}, err
	}
	return rd.access(r.Context(), FromUserInfo(user), TokenExpiry(token))
}

func (rd *Reader) access(ctx context.Context, id Identity, expires time.Time) (Access, error) {
	if rd.Writers != nil && rd.Writers.AuthorizeRematch(id) == nil {
		return Access{User: id.Username, Scope: ReadScope{Cluster: true}, Expires: expires}, nil
	}
	s, err := rd.Scopes.Scope(ctx, id)
	if err != nil {
		return Access{}, fmt.Errorf("%w: %w", authn.ErrAuthUnavailable, err)
	}
	return Access{User: id.Username, Scope: s, Expires: expires}, nil
}

// proxied returns the identity the trusted proxy set in r's headers. The
// headers of any other peer are removed, never believed.
func (rd *Reader) proxied(r *http.Request) (Identity, bool) {
	p := rd.Proxy
	if p == nil || p.UserHeader == "" {
		return Identity{}, false
	}
	if !p.trusts(r.RemoteAddr) {
		r.Header.Del(p.UserHeader)
		if p.GroupsHeader != "" {
			r.Header.Del(p.GroupsHeader)
		}
		return Identity{}, false
	}
	user := strings.TrimSpace(r.Header.Get(p.UserHeader))
	if user == "" {
		return Identity{}, false
	}
	id := Identity{Username: user}
	if p.GroupsHeader != "" {
		for _, v := range r.Header.Values(p.GroupsHeader) {
			for _, g := range strings.Split(v, ",") {
				if g = strings.TrimSpace(g); g != "" {
					id.Groups = append(id.Groups, g)
				}
			}
		}
	}
	return id, true
}

func (p *Proxy) trusts(remoteAddr string) bool {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	ip = ip.Unmap()
	for _, c := range p.Trusted {
		if c.Contains(ip) {
			return true
		}
	}
	return false
}

// BearerToken returns the request's bearer token: from the Authorization
// header, or from a Sec-WebSocket-Protocol entry of the form
// WebSocketProtocolPrefix + base64url(token). "" when there is none.
func BearerToken(r *http.Request) string {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, token, ok := strings.Cut(h, " ")
		if ok && strings.EqualFold(scheme, "Bearer") {
			return strings.TrimSpace(token)
		}
		return ""
	}
	for _, v := range r.Header.Values("Sec-WebSocket-Protocol") {
		for _, p := range strings.Split(v, ",") {
			enc, ok := strings.CutPrefix(strings.TrimSpace(p), WebSocketProtocolPrefix)
			if !ok {
				continue
			}
			b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(enc, "="))
			if err == nil && len(b) > 0 && len(b) <= MaxTokenBytes {
				return string(b)
			}
		}
	}
	return ""
}

// TokenExpiry returns the exp claim of a JWT (zero when it has none or is
// not one). It does not verify anything: call it on a reviewed token.
func TokenExpiry(token string) time.Time {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return time.Time{}
	}
	var claims struct {
		Exp *json.Number `json:"exp"`
	}
	if decodeSegment(parts[1], &claims) != nil || claims.Exp == nil {
		return time.Time{}
	}
	t, err := authn.NumericDate(*claims.Exp)
	if err != nil {
		return time.Time{}
	}
	return t
}
