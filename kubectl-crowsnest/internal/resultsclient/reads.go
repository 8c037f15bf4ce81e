package resultsclient

import (
	"context"
	"net/url"
	"strconv"
	"time"

	"github.com/crowsnest-dev/crowsnest/kubectl-crowsnest/internal/resultsapi"
)

// MaxItems bounds what one command collects across pages.
const MaxItems = 10000

// ListOptions filters the report list (GET /api/v1/reports).
type ListOptions struct {
	// Namespace asks for the images running in it. A results-api from before
	// the inventory ignores the parameter; its items then carry no runningIn.
	Namespace   string
	MinSeverity string
	Fixable     bool
	Query       string // q: image reference or vulnerability id
	Sort        string
}

// ListReports returns every report matching opts, following the cursor up
// to MaxItems.
func (c *Client) ListReports(ctx context.Context, opts ListOptions) ([]resultsapi.ReportSummary, error) {
	q := url.Values{"limit": {"500"}}
	set(q, "namespace", opts.Namespace)
	set(q, "minSeverity", opts.MinSeverity)
	set(q, "q", opts.Query)
	set(q, "sort", opts.Sort)
	if opts.Fixable {
		q.Set("fixable", "true")
	}
	var out []resultsapi.ReportSummary
	for len(out) < MaxItems {
		var page resultsapi.ReportList
		if err := c.Get(ctx, Request{Path: "/api/v1/reports", Query: q, Namespace: opts.Namespace}, &page); err != nil {
			return nil, err
		}
		out = append(out, page.Items...)
		next := deref(page.NextCursor)
		if next == "" {
			break
		}
		q.Set("cursor", next)
	}
	return out, nil
}

// Report returns a report with all of its findings (results-api pages them;
// a report holds at most 50,000).
func (c *Client) Report(ctx context.Context, digest, namespace string) (*resultsapi.ReportDetail, error) {
	path := "/api/v1/reports/" + url.PathEscape(digest)
	q := url.Values{"findingsLimit": {"5000"}}
	var out *resultsapi.ReportDetail
	for {
		var page resultsapi.ReportDetail
		if err := c.Get(ctx, Request{Path: path, Query: q, Namespace: namespace}, &page); err != nil {
			return nil, err
		}
		if out == nil {
			out = &page
		} else {
			out.Findings = append(out.Findings, page.Findings...)
		}
		next := deref(page.FindingsNextCursor)
		if next == "" {
			break
		}
		q.Set("findingsCursor", next)
	}
	out.FindingsNextCursor = nil
	return out, nil
}

// Vulnerability returns a vulnerability and the images carrying it.
func (c *Client) Vulnerability(ctx context.Context, id, namespace string) (*resultsapi.Vulnerability, error) {
	var v resultsapi.Vulnerability
	if err := c.Get(ctx, Request{Path: "/api/v1/vulnerabilities/" + url.PathEscape(id), Namespace: namespace}, &v); err != nil {
		return nil, err
	}
	return &v, nil
}

// ChangeOptions filters the fleet's change feed (GET /api/v1/changes).
type ChangeOptions struct {
	Since       time.Time
	MinSeverity string
	Max         int // stop after this many changes (0: MaxItems)
}

// Changes returns the changes since opts.Since, newest first.
func (c *Client) Changes(ctx context.Context, opts ChangeOptions) ([]resultsapi.Change, error) {
	q := url.Values{"limit": {"100"}}
	if !opts.Since.IsZero() {
		q.Set("since", opts.Since.UTC().Format(time.RFC3339))
	}
	set(q, "minSeverity", opts.MinSeverity)
	max := opts.Max
	if max <= 0 || max > MaxItems {
		max = MaxItems
	}
	var out []resultsapi.Change
	for len(out) < max {
		if rest := max - len(out); rest < 100 {
			q.Set("limit", strconv.Itoa(rest))
		}
		var page resultsapi.ChangeList
		if err := c.Get(ctx, Request{Path: "/api/v1/changes", Query: q}, &page); err != nil {
			return nil, err
		}
		out = append(out, page.Items...)
		next := deref(page.NextCursor)
		if next == "" {
			break
		}
		q.Set("cursor", next)
	}
	if len(out) > max {
		out = out[:max]
	}
	return out, nil
}

func set(q url.Values, k, v string) {
	if v != "" {
		q.Set(k, v)
	}
}

// deref reads an optional string of the API (absent: empty).
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
