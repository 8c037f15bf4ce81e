package resultsclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The lookup is a read of results-api: with --read-auth=kubernetes,
// results-api authorizes it with a SubjectAccessReview for list on the
// virtual resource reports.crowsnest.dev, cluster-wide. No API server serves
// that resource, so it is not a kubebuilder marker here (which would put it
// into the per-namespace Roles of a namespaced install): the chart's
// operator ClusterRole grants it (helm/crowsnest/charts/operator/templates/rbac.yaml).

// MaxBatch is the most digests results-api accepts in one lookup.
const MaxBatch = 10000

const (
	maxResponseBytes = 32 << 20
	maxCacheEntries  = 200000
)

// Options configure a Client.
type Options struct {
	BaseURL  string        // e.g. http://results-api.crowsnest:8080
	CacheTTL time.Duration // how long an answer is reused; 0 disables the cache
	Timeout  time.Duration // per request
	// Token, when set, returns a bearer token for each request (read from a
	// file so a rotated token is picked up).
	Token func() (string, error)
	// Observe, when set, receives each request's duration and error.
	Observe func(d time.Duration, err error)
	HTTP    *http.Client
	Now     func() time.Time
}

// Client is safe for concurrent use.
type Client struct {
	opts     Options
	url      string
	mu       sync.Mutex
	cache    map[string]entry
	requests atomic.Int64
}

type entry struct {
	scannedAt time.Time // zero: no report
	fetched   time.Time
}

// New returns a Client for the results-api at opts.BaseURL.
func New(opts Options) (*Client, error) {
	if opts.BaseURL == "" {
		return nil, errors.New("results-api URL is empty")
	}
	if !strings.HasPrefix(opts.BaseURL, "http://") && !strings.HasPrefix(opts.BaseURL, "https://") {
		return nil, fmt.Errorf("results-api URL %q must start with http:// or https://", opts.BaseURL)
	}
	if opts.HTTP == nil {
		opts.HTTP = &http.Client{}
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Client{opts: opts, url: strings.TrimRight(opts.BaseURL, "/") + "/api/v1/reports/lookup", cache: map[string]entry{}}, nil
}

// Requests returns how many lookup requests were sent.
func (c *Client) Requests() int64 { return c.requests.Load() }

// Lookup returns the scan time of every digest in want that has a report;
// digests without one are absent. want maps each digest to the earliest time
// a cached answer may have been fetched (zero: any answer younger than the
// cache TTL), so callers can demand a fresh answer after a scan finished.
// Digests not answered by the cache go to results-api in one request (more
// only beyond MaxBatch).
func (c *Client) Lookup(ctx context.Context, want map[string]time.Time) (map[string]time.Time, error) {
	now := c.opts.Now()
	out := make(map[string]time.Time, len(want))
	var missing []string
	c.mu.Lock()
	for d, notBefore := range want {
		e, ok := c.cache[d]
		if ok && c.opts.CacheTTL > 0 && now.Sub(e.fetched) < c.opts.CacheTTL && !e.fetched.Before(notBefore) {
			if !e.scannedAt.IsZero() {
				out[d] = e.scannedAt
			}
			continue
		}
		missing = append(missing, d)
	}
	c.mu.Unlock()
	for start := 0; start < len(missing); start += MaxBatch {
		batch := missing[start:min(start+MaxBatch, len(missing))]
		found, err := c.post(ctx, batch)
		if err != nil {
			return nil, err
		}
		c.store(batch, found, now)
		for d, t := range found {
			out[d] = t
		}
	}
	return out, nil
}

// Forget drops a digest's cached answer, so the next lookup asks
// results-api again (used when a report.deleted event arrives).
func (c *Client) Forget(digest string) {
	c.mu.Lock()
	delete(c.cache, digest)
	c.mu.Unlock()
}

func (c *Client) store(batch []string, found map[string]time.Time, at time.Time) {
	if c.opts.CacheTTL <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.cache)+len(batch) > maxCacheEntries {
		for d, e := range c.cache {
			if at.Sub(e.fetched) >= c.opts.CacheTTL {
				delete(c.cache, d)
			}
		}
		if len(c.cache)+len(batch) > maxCacheEntries {
			clear(c.cache)
		}
	}
	for _, d := range batch {
		c.cache[d] = entry{scannedAt: found[d], fetched: at}
	}
}

type lookupRequest struct {
	Digests []string `json:"digests"`
}

type lookupResponse struct {
	Reports []struct {
		Digest    string    `json:"digest"`
		ScannedAt time.Time `json:"scannedAt"`
	} `json:"reports"`
}

func (c *Client) post(ctx context.Context, digests []string) (found map[string]time.Time, err error) {
	c.requests.Add(1)
	start := time.Now()
	if c.opts.Observe != nil {
		defer func() { c.opts.Observe(time.Since(start), err) }()
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	body, err := json.Marshal(lookupRequest{Digests: digests})
	if err != nil {
		return nil, fmt.Errorf("encode lookup: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("build lookup request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if c.opts.Token != nil {
		tok, err := c.opts.Token()
		if err != nil {
			return nil, fmt.Errorf("read results-api token: %w", err)
		}
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := c.opts.HTTP.Do(req)
	if err != nil {
		return nil, fmt.Errorf("lookup %d digests at %s: %w", len(digests), c.url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return nil, fmt.Errorf("read lookup response: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("lookup at %s: HTTP %d: %s", c.url, resp.StatusCode, snippet(data))
	}
	var lr lookupResponse
	if err := json.Unmarshal(data, &lr); err != nil {
		return nil, fmt.Errorf("decode lookup response: %w", err)
	}
	asked := make(map[string]bool, len(digests))
	for _, d := range digests {
		asked[d] = true
	}
	found = make(map[string]time.Time, len(lr.Reports))
	for _, r := range lr.Reports {
		if asked[r.Digest] { // ignore anything not asked for
			found[r.Digest] = r.ScannedAt
		}
	}
	return found, nil
}

func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
