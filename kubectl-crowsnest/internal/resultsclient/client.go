package resultsclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"k8s.io/client-go/rest"
)

// maxBody bounds one response: a report page holds at most 5,000 findings.
const maxBody = 64 << 20

// Service names results-api's Service, reached through the API server.
type Service struct {
	Namespace string // e.g. crowsnest
	Name      string // e.g. crowsnest-results-api
	Port      string // the port's name or number, e.g. http
}

// scheme is the one the API server uses to talk to the Service: the chart
// names its port "https" when results-api serves TLS.
func (s Service) scheme() string {
	if s.Port == "https" || s.Port == "443" {
		return "https"
	}
	return "http"
}

// Client reads results-api.
type Client struct {
	base   string // URL prefix that /api/v1/... is appended to
	http   *http.Client
	token  string   // direct mode only: sent as a bearer token
	svc    *Service // proxy mode only
	direct string   // direct mode only: the URL, for messages
}

// NewProxy reaches results-api through the API server's service proxy with
// the credentials of cfg (the user's kubeconfig, impersonation included).
//
// The API server authenticates and authorizes the caller (RBAC: get on
// services/proxy for the Service) and then drops the Authorization header,
// so results-api sees the API server's request without the user's token.
func NewProxy(cfg *rest.Config, svc Service) (*Client, error) {
	if svc.Namespace == "" || svc.Name == "" || svc.Port == "" {
		return nil, errors.New("--service, --service-namespace and --service-port must not be empty")
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("build API server client: %w", err)
	}
	host, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("API server address: %w", err)
	}
	base := strings.TrimRight(host.String(), "/") + fmt.Sprintf("/api/v1/namespaces/%s/services/%s:%s:%s/proxy",
		url.PathEscape(svc.Namespace), svc.scheme(), url.PathEscape(svc.Name), url.PathEscape(svc.Port))
	if hc.Timeout == 0 {
		hc.Timeout = time.Minute
	}
	return &Client{base: base, http: hc, svc: &svc}, nil
}

// NewDirect reaches results-api at rawURL (e.g. http://127.0.0.1:8080 after
// kubectl port-forward), sending token as a bearer token when it is set.
func NewDirect(rawURL, token string) (*Client, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--server %q: want an http:// or https:// URL of results-api", rawURL)
	}
	return &Client{
		base:   strings.TrimRight(u.String(), "/"),
		http:   &http.Client{Timeout: time.Minute},
		token:  token,
		direct: u.Redacted(),
	}, nil
}

// Target describes where the client sends requests, for messages.
func (c *Client) Target() string {
	if c.svc != nil {
		return fmt.Sprintf("service %s/%s (port %s) through the API server", c.svc.Namespace, c.svc.Name, c.svc.Port)
	}
	return c.direct
}

// Request is one GET of results-api.
type Request struct {
	Path  string     // under the API root, e.g. /api/v1/reports
	Query url.Values // may be nil
	// Namespace is the namespace the caller asked about ("" for
	// cluster-wide); it only shapes the message of a refusal.
	Namespace string
}

// Get sends req and decodes a 2xx JSON answer into out. Other answers come
// back as *Error.
func (c *Client) Get(ctx context.Context, req Request, out any) error {
	u := c.base + req.Path
	if len(req.Query) > 0 {
		u += "?" + req.Query.Encode()
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("build request %s: %w", req.Path, err)
	}
	hr.Header.Set("Accept", "application/json")
	if c.token != "" {
		hr.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(hr)
	if err != nil {
		return fmt.Errorf("reach results-api (%s): %w", c.Target(), err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return fmt.Errorf("read %s from results-api: %w", req.Path, err)
	}
	if len(body) > maxBody {
		return fmt.Errorf("results-api answered %s with more than %d bytes", req.Path, maxBody)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return c.newError(req, resp.StatusCode, body)
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("decode %s from results-api (%s): %w", req.Path, c.Target(), err)
	}
	return nil
}
