package resultsclient

import (
	"strings"
	"testing"
)

// TestErrorMessages covers the answers the tests against real servers
// cannot produce here: a results-api refusal that came through the API
// server's proxy (no request gets that far on this machine), and a
// proxy in between that answers with something that is neither JSON error.
func TestErrorMessages(t *testing.T) {
	proxy := &Client{svc: &Service{Namespace: "crowsnest", Name: "crowsnest-results-api", Port: "http"}}
	direct := &Client{direct: "http://127.0.0.1:8080"}
	for _, tc := range []struct {
		name   string
		c      *Client
		status int
		body   string
		ns     string
		want   []string
		origin Origin
	}{
		{"results-api 401 behind the proxy", proxy, 401, `{"error":{"code":"unauthorized","message":"missing bearer token"}}`, "",
			[]string{"does not pass your credentials on to results-api", "kubectl port-forward -n crowsnest svc/crowsnest-results-api 8080:http", "--server http://127.0.0.1:8080 --token", "--audience crowsnest-results-api"}, FromResultsAPI},
		{"results-api 401 direct", direct, 401, `{"error":{"code":"unauthorized","message":"missing bearer token"}}`, "",
			[]string{"results-api at http://127.0.0.1:8080 refused the credentials (401 unauthorized", "pass --token", "--audience crowsnest-results-api"}, FromResultsAPI},
		{"results-api 403", proxy, 403, `{"error":{"code":"forbidden","message":"no"}}`, "shop",
			[]string{"your credentials cannot read Crowsnest reports in namespace shop", "crowsnest-view"}, FromResultsAPI},
		{"no endpoints", proxy, 503, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"no endpoints available for service \"crowsnest-results-api\"","reason":"ServiceUnavailable","code":503}`, "",
			[]string{"cannot reach results-api through service crowsnest/crowsnest-results-api port \"http\"", "--service-port"}, FromAPIServer},
		{"busy", direct, 503, `{"error":{"code":"busy","message":"at memory limit"}}`, "",
			[]string{"busy or unavailable (503 busy at memory limit); retry later"}, FromResultsAPI},
		{"html from an ingress", direct, 502, "<html>" + strings.Repeat("x", 300) + "</html>", "",
			[]string{"answered /api/v1/reports with HTTP 502: <html>xxx", "…"}, FromUnknown},
	} {
		e := tc.c.newError(Request{Path: "/api/v1/reports", Namespace: tc.ns}, tc.status, []byte(tc.body))
		if e.Origin != tc.origin {
			t.Errorf("%s: origin %v, want %v", tc.name, e.Origin, tc.origin)
		}
		for _, w := range tc.want {
			if !strings.Contains(e.Error(), w) {
				t.Errorf("%s: %q lacks %q", tc.name, e.Error(), w)
			}
		}
	}
}
