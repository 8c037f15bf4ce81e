package rematch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// Client is what a Pass needs from results-api.
type Client interface {
	// ListReports returns one page of stored reports in a stable order
	// (their image, then digest) starting after cursor ("" = the first).
	ListReports(ctx context.Context, cursor string, limit int) (Page, error)
	// GetBOM returns a stored report's CycloneDX document.
	GetBOM(ctx context.Context, digest string) ([]byte, error)
	// PutReport replaces a stored report with bom.
	PutReport(ctx context.Context, ref ReportRef, bom []byte) error
	// PutVulnDBs records that the reports of digests (at most
	// MaxRecordBatch) have unchanged findings under db, and returns those
	// that have no report.
	PutVulnDBs(ctx context.Context, digests []string, db DB) (missing []string, err error)
}

// ReportRef is what a Pass reads from a report summary.
type ReportRef struct {
	Digest  string `json:"digest"`
	Image   string `json:"image"`
	DBBuilt string `json:"dbBuilt"` // RFC 3339, or empty
	// FindingsSHA256 is the stored findings' fingerprint (hex, the
	// contract's finding.Fingerprint); empty for reports stored before
	// results-api kept one.
	FindingsSHA256 string `json:"findingsSha256,omitempty"`
}

// Page is one page of ListReports.
type Page struct {
	Items      []ReportRef `json:"items"`
	NextCursor string      `json:"nextCursor"` // empty on the last page
}

// ErrRejected marks a request results-api refused for good (4xx): retrying
// it cannot help.
var ErrRejected = errors.New("rejected by results-api")

// HTTPClient talks to results-api's REST API with a bearer token read from
// a file on every request (a projected service-account token rotates). It
// retries network errors, 5xx and 429 with exponential backoff.
type HTTPClient struct {
	BaseURL   string       // e.g. http://results-api.crowsnest:8080, no trailing slash
	TokenFile string       // bearer token file; never logged
	HTTP      *http.Client // default: 2-minute timeout
	// Attempts per request (default 5); the wait doubles from BackoffBase
	// (default 500ms) up to BackoffMax (default 30s), with jitter, or
	// follows Retry-After when the server sends one.
	Attempts    int
	BackoffBase time.Duration
	BackoffMax  time.Duration
	// MaxBOMBytes bounds a downloaded BOM (default 256 MiB).
	MaxBOMBytes int64
}

var _ Client = (*HTTPClient)(nil)

// ListReports implements Client: GET /api/v1/reports?sort=image. Reads
// carry the rematch token too: with --read-auth=kubernetes results-api lets
// the rematch scope read every report.
func (c *HTTPClient) ListReports(ctx context.Context, cursor string, limit int) (Page, error) {
	q := url.Values{"sort": {"image"}, "limit": {strconv.Itoa(limit)}}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	var p Page
	err := c.do(ctx, http.MethodGet, "/api/v1/reports?"+q.Encode(), nil, "", true, func(r io.Reader) error {
		return json.NewDecoder(io.LimitReader(r, 64<<20)).Decode(&p)
	})
	return p, err
}

// GetBOM implements Client: GET /api/v1/reports/{digest}/bom.
func (c *HTTPClient) GetBOM(ctx context.Context, digest string) ([]byte, error) {
	limit := c.MaxBOMBytes
	if limit <= 0 {
		limit = 256 << 20
	}
	var out []byte
	err := c.do(ctx, http.MethodGet, "/api/v1/reports/"+url.PathEscape(digest)+"/bom", nil, "", true, func(r io.Reader) error {
		b, err := io.ReadAll(io.LimitReader(r, limit+1))
		if err != nil {
			return err
		}
		if int64(len(b)) > limit {
			return fmt.Errorf("%w: BOM larger than %d bytes", ErrRejected, limit)
		}
		out = b
		return nil
	})
	return out, err
}

// PutReport implements Client: PUT /api/v1/reports/{digest}?image=….
func (c *HTTPClient) PutReport(ctx context.Context, ref ReportRef, bom []byte) error {
	path := "/api/v1/reports/" + url.PathEscape(ref.Digest)
	if ref.Image != "" {
		path += "?" + url.Values{"image": {ref.Image}}.Encode()
	}
	return c.do(ctx, http.MethodPut, path, bom, "application/vnd.cyclonedx+json", true, nil)
}

// PutVulnDBs implements Client: PUT /api/v1/reports/vulndb.
func (c *HTTPClient) PutVulnDBs(ctx context.Context, digests []string, db DB) ([]string, error) {
	body, err := json.Marshal(struct {
		Built   string   `json:"built"`
		Schema  string   `json:"schema"`
		Digests []string `json:"digests"`
	}{db.Built.UTC().Format(time.RFC3339), db.Schema, digests})
	if err != nil {
		return nil, err
	}
	var res struct {
		Missing []string `json:"missing"`
	}
	err = c.do(ctx, http.MethodPut, "/api/v1/reports/vulndb", body, "application/json", true, func(r io.Reader) error {
		return json.NewDecoder(io.LimitReader(r, 1<<20)).Decode(&res)
	})
	return res.Missing, err
}

// StatusError is a response results-api gave with a status that is not a
// success.
type StatusError struct {
	Method, Path string
	Status       int
	Code         string // results-api's error code, when it sent one
	retryAfter   time.Duration
}

func (e *StatusError) Error() string {
	if e.Code != "" {
		return fmt.Sprintf("%s %s: HTTP %d %s", e.Method, e.Path, e.Status, e.Code)
	}
	return fmt.Sprintf("%s %s: HTTP %d", e.Method, e.Path, e.Status)
}

// Unwrap makes a 4xx other than 408 and 429 match ErrRejected.
func (e *StatusError) Unwrap() error {
	if !retryableStatus(e.Status) && e.Status >= 400 && e.Status < 500 {
		return ErrRejected
	}
	return nil
}

func retryableStatus(code int) bool {
	return code >= 500 || code == http.StatusTooManyRequests || code == http.StatusRequestTimeout
}

func (c *HTTPClient) do(ctx context.Context, method, path string, body []byte, contentType string, auth bool,
	read func(io.Reader) error) error {
	attempts := c.Attempts
	if attempts <= 0 {
		attempts = 5
	}
	var err error
	for attempt := range attempts {
		if attempt > 0 {
			if werr := sleep(ctx, c.backoff(attempt, err)); werr != nil {
				return fmt.Errorf("%w (last error: %w)", werr, err)
			}
		}
		err = c.once(ctx, method, path, body, contentType, auth, read)
		if err == nil || errors.Is(err, ErrRejected) || ctx.Err() != nil {
			return err
		}
	}
	return err
}

func (c *HTTPClient) once(ctx context.Context, method, path string, body []byte, contentType string, auth bool,
	read func(io.Reader) error) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(c.BaseURL, "/")+path, rd)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrRejected, err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if auth {
		tok, err := c.token()
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 2 * time.Minute}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		if read != nil {
			if err := read(resp.Body); err != nil {
				return fmt.Errorf("%s %s: read response: %w", method, path, err)
			}
		}
		// A body shorter than its Content-Length was cut off; read reports
		// that as io.ErrUnexpectedEOF above.
		return nil
	}
	se := &StatusError{Method: method, Path: path, Status: resp.StatusCode}
	var eb struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&eb) == nil {
		se.Code = eb.Error.Code
	}
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
		se.retryAfter = time.Duration(s) * time.Second
	}
	return se
}

// token reads the bearer token; a missing or empty file is not retried
// away quickly, but it may appear (kubelet writes it), so it is transient.
func (c *HTTPClient) token() (string, error) {
	b, err := os.ReadFile(c.TokenFile)
	if err != nil {
		return "", fmt.Errorf("read token file: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", errors.New("token file is empty")
	}
	return tok, nil
}

func (c *HTTPClient) backoff(attempt int, last error) time.Duration {
	base, maxWait := c.BackoffBase, c.BackoffMax
	if base <= 0 {
		base = 500 * time.Millisecond
	}
	if maxWait <= 0 {
		maxWait = 30 * time.Second
	}
	var se *StatusError
	if errors.As(last, &se) && se.retryAfter > 0 {
		return min(se.retryAfter, maxWait)
	}
	d := base << min(attempt-1, 20)
	if d > maxWait || d <= 0 {
		d = maxWait
	}
	return d/2 + rand.N(d/2+1) //nolint:gosec // jitter, not security
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
