package receiver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/crowsnest-dev/crowsnest/notifier/internal/config"
	"github.com/crowsnest-dev/crowsnest/notifier/internal/state"
)

// kind renders a group as one HTTP request for one receiver type.
type kind interface {
	request(ctx context.Context, g *state.Group, dashboard string) (*http.Request, error)
}

func newRequest(ctx context.Context, url string, body []byte) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("new request: %w", err)
	}
	req.Header.Set("User-Agent", "crowsnest-notifier")
	return req, nil
}

// build turns a receiver's configuration into its kind, reading its
// secret files.
func build(r *config.Receiver, now func() time.Time) (kind, error) {
	switch {
	case r.Alertmanager != nil:
		a := &alertmanager{url: r.Alertmanager.URL, duration: time.Duration(r.Alertmanager.AlertDuration)}
		if f := r.Alertmanager.BearerTokenFile; f != "" {
			t, err := config.ReadSecret(f)
			if err != nil {
				return nil, fmt.Errorf("receiver %s: bearer token: %w", r.Name, err)
			}
			a.token = t
		}
		return a, nil
	case r.Slack != nil:
		u, err := config.ReadSecret(r.Slack.WebhookURLFile)
		if err != nil {
			return nil, fmt.Errorf("receiver %s: slack webhook URL: %w", r.Name, err)
		}
		if _, err := http.NewRequest(http.MethodPost, u, nil); err != nil {
			return nil, fmt.Errorf("receiver %s: slack webhook URL in %s is not a URL", r.Name, r.Slack.WebhookURLFile)
		}
		return &slack{url: u}, nil
	case r.Webhook != nil:
		w := &webhook{url: r.Webhook.URL, mode: r.Webhook.Mode, now: now}
		if f := r.Webhook.HMACKeyFile; f != "" {
			k, err := config.ReadSecret(f)
			if err != nil {
				return nil, fmt.Errorf("receiver %s: hmac key: %w", r.Name, err)
			}
			w.key = []byte(k)
		}
		return w, nil
	}
	return nil, fmt.Errorf("receiver %s: no type", r.Name)
}

// errPermanent marks a refusal that retrying cannot fix (a 4xx other than
// 408 and 429).
var errPermanent = errors.New("refused")

// deliver makes one attempt. Bodies of answers are read (bounded) and
// discarded; they are never logged.
func deliver(ctx context.Context, client *http.Client, req *http.Request) error {
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("post: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return nil
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode >= 500:
		return fmt.Errorf("status %d", resp.StatusCode)
	default:
		return fmt.Errorf("%w: status %d", errPermanent, resp.StatusCode)
	}
}
