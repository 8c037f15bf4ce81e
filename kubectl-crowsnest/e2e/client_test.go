package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/crowsnest-dev/crowsnest/kubectl-crowsnest/internal/resultsclient"
)

// TestClientNotFound: results-api's two 404s — a report it does not have
// (or the caller may not read) and a route it does not serve (older than
// the plugin) — are told apart and explained.
func TestClientNotFound(t *testing.T) {
	s := startSeeded(t)
	rc, err := resultsclient.NewDirect(s.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	_, err = rc.Report(ctx, "sha256:"+zeros(3), "shop")
	if !resultsclient.IsNotFound(err) || resultsclient.IsRouteMissing(err) || !strings.Contains(err.Error(), "or your credentials cannot read it") {
		t.Fatalf("missing report: %v", err)
	}
	var out struct{}
	err = rc.Get(ctx, resultsclient.Request{Path: "/api/v1/no-such-route"}, &out)
	if !resultsclient.IsRouteMissing(err) || resultsclient.IsNotFound(err) || !strings.Contains(err.Error(), "older than this plugin; upgrade results-api") {
		t.Fatalf("missing route: %v", err)
	}
	err = rc.Get(ctx, resultsclient.Request{Path: "/api/v1/reports", Query: map[string][]string{"limit": {"0"}}}, &out)
	if err == nil || !strings.Contains(err.Error(), "results-api refused the request /api/v1/reports (400 invalid_query") {
		t.Fatalf("bad query: %v", err)
	}

	for _, bad := range []string{"127.0.0.1:8080", "ftp://x", "http://"} {
		if _, err := resultsclient.NewDirect(bad, ""); err == nil {
			t.Errorf("NewDirect(%q): no error", bad)
		}
	}
}
