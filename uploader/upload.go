package main

import (
	"github.com/crowsnest-dev/crowsnest/api/scan"

	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"time"
)

var (
	// errRejected: results-api answered 4xx; retrying cannot help.
	errRejected = errors.New("rejected by results-api")
	// errUnreachable: attempts or deadline ran out on connection errors or 5xx.
	errUnreachable = errors.New("results-api unreachable")
)

// uploader PUTs one compressed report, retrying transient failures.
type uploader struct {
	client      *http.Client
	endpoint    string     // full PUT URL
	db          provenance // sent as headers when known
	token       string
	timeout     time.Duration
	maxAttempts int
	backoff     backoff
	log         *slog.Logger
	sleep       func(context.Context, time.Duration) error
}

// summary is the part of results-api's ReportSummary the uploader logs.
type summary struct {
	Findings int            `json:"findings"`
	Fixable  int            `json:"fixable"`
	Counts   map[string]int `json:"counts"`
}

// endpointURL builds {api}/api/v1/reports/{digest}?image={image}.
func endpointURL(apiURL, digest, image string) (string, error) {
	u, err := url.Parse(strings.TrimRight(apiURL, "/"))
	if err != nil {
		return "", err
	}
	u = u.JoinPath("api", "v1", "reports", digest)
	if image != "" {
		u.RawQuery = url.Values{"image": {image}}.Encode()
	}
	return u.String(), nil
}

// upload sends b (report, compressed) until it is stored, a 4xx ends it,
// or attempts or ctx's deadline run out. A results-api that does not
// accept zstd (415 to a zstd body: one from before issue 30) gets the
// report gzip-compressed at once, in the same attempt's place.
func (u *uploader) upload(ctx context.Context, report []byte, b body) error {
	var last error
	for attempt := 1; attempt <= u.maxAttempts; attempt++ {
		start := time.Now()
		status, sum, retry, err := u.attempt(ctx, b)
		ms := time.Since(start).Milliseconds()
		if err == nil {
			u.log.Info("report uploaded", "attempt", attempt, "status", status, "duration_ms", ms,
				"encoding", b.encoding, "findings", sum.Findings, "fixable", sum.Fixable, "counts", sum.Counts)
			return nil
		}
		last = err
		if status == http.StatusUnsupportedMediaType && b.encoding == "zstd" {
			gz, gerr := gzipBody(report)
			if gerr != nil {
				return fmt.Errorf("compress report: %w", gerr)
			}
			u.log.Warn("results-api does not accept zstd, sending gzip", "status", status, "error", err.Error(),
				"gzip_bytes", len(gz.data))
			b = gz
			attempt--
			continue
		}
		if !retry {
			u.log.Error("upload rejected", "attempt", attempt, "status", status, "duration_ms", ms, "error", err.Error())
			return fmt.Errorf("%w: %w", errRejected, err)
		}
		if attempt == u.maxAttempts {
			u.log.Warn("upload attempt failed", "attempt", attempt, "status", status, "duration_ms", ms, "error", err.Error())
			break
		}
		delay := u.backoff.delay(attempt)
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < delay {
			u.log.Warn("upload attempt failed", "attempt", attempt, "status", status, "duration_ms", ms, "error", err.Error())
			return fmt.Errorf("%w: deadline leaves no time for attempt %d: %w", errUnreachable, attempt+1, last)
		}
		u.log.Warn("upload attempt failed, retrying", "attempt", attempt, "status", status, "duration_ms", ms,
			"retry_in", delay, "error", err.Error())
		if err := u.sleep(ctx, delay); err != nil {
			return fmt.Errorf("%w: %w (last error: %w)", errUnreachable, err, last)
		}
	}
	return fmt.Errorf("%w: %d attempts failed: %w", errUnreachable, u.maxAttempts, last)
}

// attempt makes one PUT. retry reports whether the failure is transient.
func (u *uploader) attempt(ctx context.Context, b body) (status int, sum summary, retry bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, u.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, u.endpoint, bytes.NewReader(b.data))
	if err != nil {
		return 0, sum, false, err
	}
	req.Header.Set("Content-Type", "application/vnd.cyclonedx+json")
	req.Header.Set("Content-Encoding", b.encoding)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", "Bearer "+u.token)
	req.Header.Set("User-Agent", "crowsnest-uploader")
	if !u.db.Built.IsZero() {
		req.Header.Set(scan.HeaderDBBuilt, u.db.builtString())
		req.Header.Set(scan.HeaderDBSchema, u.db.Schema)
	}
	resp, err := u.client.Do(req)
	if err != nil {
		// Connection refused/reset, DNS, TLS or the attempt timeout: transient.
		return 0, sum, true, err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	switch {
	case resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusCreated:
		_ = json.Unmarshal(data, &sum) // the summary is only logged
		return resp.StatusCode, sum, false, nil
	case resp.StatusCode >= 500:
		return resp.StatusCode, sum, true, fmt.Errorf("HTTP %d: %s", resp.StatusCode, apiMessage(data))
	default:
		return resp.StatusCode, sum, false, fmt.Errorf("HTTP %d: %s", resp.StatusCode, apiMessage(data))
	}
}

// apiMessage extracts results-api's {"error":{"code","message"}} text, or a
// short prefix of any other body.
func apiMessage(body []byte) string {
	var e struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && (e.Error.Code != "" || e.Error.Message != "") {
		return strings.TrimSpace(e.Error.Code + ": " + e.Error.Message)
	}
	s := strings.TrimSpace(string(body))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// backoff is exponential backoff with full jitter: the wait before attempt
// n+1 is uniform in [0, min(max, base·2^(n-1))).
type backoff struct {
	base, max time.Duration
	rand      func(n int64) int64 // rand.Int64N in production
}

func (b backoff) ceiling(attempt int) time.Duration {
	c := b.base
	for i := 1; i < attempt && c < b.max; i++ {
		c *= 2
	}
	return min(c, b.max)
}

func (b backoff) delay(attempt int) time.Duration {
	r := b.rand
	if r == nil {
		r = rand.Int64N
	}
	return time.Duration(r(int64(b.ceiling(attempt))))
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
